import type { AuthMode, SignatureScheme } from '../../core/snapshot.ts';
import type { AcceptedDelivery } from '../store/deliveries.ts';

/** What the pipeline needs to know of a webhook; lookups return only live, enabled ones. */
export interface IngressWebhook {
  uid: string;
  factory: string;
  name: string;
  authMode: AuthMode;
  signatureScheme: SignatureScheme | null;
  secretName: string;
  /** The bound secret version (docs/ingress.md#webhook-lifecycle); null while the secret is pending. */
  secretVersion: number | null;
  /** The version bound before a graceful rotation, and until when it still verifies (ISO 8601); null when none. */
  previousSecretVersion: number | null;
  previousSecretUntil: string | null;
  deliveryIdHeader: string | null;
}

/**
 * Called inside the Accepted transaction (pipeline step 9, docs/ingress.md), synchronously: this is
 * where runs of matching automations are created (docs/automations.md), so that the delivery, its
 * payload and its runs commit together. A hook that throws rolls the delivery back (the sender gets
 * a 500 and retries).
 */
export type AcceptedHook = (webhook: IngressWebhook, delivery: AcceptedDelivery, body?: ParsedBody) => void;

/**
 * The body as the pipeline parsed it at pipeline step 7 (strict UTF-8, JSON.parse), handed to
 * hooks so they need not parse it again. Boxed, because `null` is a valid JSON body.
 */
export interface ParsedBody {
  json: unknown;
}
