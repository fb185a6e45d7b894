/**
 * The compiled snapshot: what `factory build` writes and what plan/apply send to the runtime.
 * schemas/snapshot.schema.json is its contract; test/core/snapshot.test.ts checks that these
 * types and the schema agree on the examples. Keys are camelCase where they mirror a file key
 * (authMode, secretName, ...) and snake_case for snapshot-level fields, as in SPEC 4.
 *
 * Canonical form: object keys sorted, resources sorted by name, no undefined values, no
 * insignificant whitespace except a final newline; `digest` is `sha256:` + hex of the canonical
 * JSON of the snapshot without its `digest` field.
 */

export const SNAPSHOT_FORMAT_VERSION = 1;

export type AuthMode = 'token' | 'url_token' | 'signature';

export const SIGNATURE_SCHEMES = [
  'standard-webhooks',
  'github',
  'gitlab',
  'bitbucket',
  'stripe',
  'shopify',
  'paddle',
  'sentry',
  'vercel',
  'netlify',
  'pagerduty',
  'rootly',
  'linear',
  'slack',
  'jira',
] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

export type AgentFormat = 'text' | 'claude-stream-json' | 'codex-json';

/** A JSON value as found in a payload filter or a delivery body. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where a resource came from: its file, relative to the repo root, with `/` separators. */
export interface SourceRef {
  file: string;
}

export interface WebhookDef {
  name: string;
  authMode: AuthMode;
  signatureScheme?: SignatureScheme;
  secretName: string;
  deliveryIdHeader?: string;
  description?: string;
  uid?: string;
  source: SourceRef;
}

export interface WebhookTrigger {
  provider: 'webhook';
  event: 'received';
  filter: {
    webhook_ids: [string];
    payload?: { [key: string]: Json };
  };
}

export interface AutomationDef {
  name: string;
  title?: string;
  enabled: boolean;
  environment: string;
  triggers: WebhookTrigger[];
  prompt: string;
  source: SourceRef;
}

export interface RepoDef {
  url: string;
  ref?: string;
  path?: string;
}

export type EnvValue = string | { secret: string };

export interface EnvironmentDef {
  name: string;
  description?: string;
  repos: RepoDef[];
  setup: string[];
  agent: {
    command: string[];
    format: AgentFormat;
    /** A duration such as `30m`, `90s`, `1h30m`; default `30m`. */
    timeout: string;
  };
  env: { [name: string]: EnvValue };
  source: SourceRef;
}

export interface Snapshot {
  format_version: number;
  factory: { name: string; description?: string; source: SourceRef };
  webhooks: WebhookDef[];
  automations: AutomationDef[];
  environments: EnvironmentDef[];
  /** sha256 hex of each source file's bytes, keyed by repo-relative path. */
  sources: { [file: string]: string };
  digest: string;
}
