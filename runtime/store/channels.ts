/**
 * What replicas on one PostgreSQL database tell each other, as LISTEN/NOTIFY channels
 * (docs/deploy.md#several-replicas): a replica that changed something another one caches
 * announces it on its channel (StoreContext.announce), and every replica drops that cache.
 */
export const CHANNELS = {
  /** Webhooks, automations, environments, factories: the definitions caches. */
  definitions: 'factory_definitions',
  /** Team secrets: the ingress's decrypted-secret cache. */
  secrets: 'factory_secrets',
} as const;

export type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];
