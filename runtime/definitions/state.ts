import type { AuthMode, AutomationNotify, EnvironmentDef, ScheduleDef, WebhookTrigger } from '../../core/snapshot.ts';

/**
 * The runtime's record of definitions (docs/plan-apply.md, docs/ingress.md#webhook-lifecycle), as
 * the store returns them. These types are shared by the pure planner (plan.ts, checks.ts) and the
 * store (store/definitions.ts), so the planner never sees SQL and the store never decides what a
 * change means.
 */

/** Who owns a factory's webhooks; fixed when the factory is created (docs/ingress.md#webhook-lifecycle). */
export type ManagedBy = 'definitions' | 'api';

export interface FactoryRecord {
  name: string;
  managedBy: ManagedBy;
  description: string | null;
  /** The `--revision` label of the last apply that changed something (e.g. a commit SHA). */
  revision: string | null;
  /** Counter bumped by every apply that changes something; part of `base_revision`. */
  generation: number;
  /** Digest of the last applied snapshot. */
  digest: string | null;
  appliedAt: string | null;
  createdAt: string;
}

export interface WebhookRecord {
  uid: string;
  factory: string;
  name: string;
  authMode: AuthMode;
  signatureScheme: string | null;
  secretName: string;
  /** The secret version the webhook verifies against; null while the secret is pending. */
  secretVersion: number | null;
  /**
   * During a graceful rotation (docs/runtime.md#graceful-rotation): the version bound before,
   * which still verifies until `previousSecretUntil` (ISO 8601); both null otherwise.
   */
  previousSecretVersion?: number | null;
  previousSecretUntil?: string | null;
  deliveryIdHeader: string | null;
  description: string | null;
  enabled: boolean;
  managedBy: ManagedBy;
  /** Repo-relative definitions file; null for API-created webhooks. */
  sourceFile: string | null;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

export interface AutomationRecord {
  factory: string;
  name: string;
  title: string | null;
  enabled: boolean;
  environment: string;
  triggers: WebhookTrigger[];
  /** Schedule triggers (docs/definitions.md#schedules); absent when it has none. */
  schedules?: ScheduleDef[];
  /** Where its runs report their state changes (docs/automations.md#notify); absent when nowhere. */
  notify?: AutomationNotify;
  prompt: string;
  sourceFile: string;
  createdAt: string;
  updatedAt: string;
}

export interface EnvironmentRecord {
  /** The environment id, unique across the runtime. */
  name: string;
  /** The factory that defines it (docs/definitions.md: a second factory cannot take the same id). */
  factory: string;
  def: EnvironmentDef;
  createdAt: string;
  updatedAt: string;
}

/** What the planner needs to know about one team secret. Never its value. */
export interface SecretFacts {
  /** Current version; null when the secret exists but is pending (no value yet). */
  version: number | null;
  /** For url_token webhooks: RFC 3986 unreserved characters only and at least 32 of them. */
  urlSafe?: boolean;
  /** For standard-webhooks webhooks: the value decodes to a signing key. */
  signingKey?: boolean;
  /** The factories that may bind it; null or absent: every factory (docs/runtime.md#which-factories-may-use-a-secret). */
  factories?: string[] | null;
}

/** Everything plan and apply decide from: this factory's records plus the runtime-wide facts. */
export interface PlanInput {
  factory: FactoryRecord | undefined;
  /** This factory's live webhooks. */
  webhooks: WebhookRecord[];
  automations: AutomationRecord[];
  /** Environments owned by this factory. */
  environments: EnvironmentRecord[];
  /** Team secrets named by the snapshot (absent key: no such secret). */
  secrets: Map<string, SecretFacts>;
  /** Owner factory of every environment id the snapshot names that another factory holds. */
  environmentOwners: Map<string, string>;
  /** Every webhook, live or deleted, of any factory, holding a UID the snapshot pins. */
  pinnedUidHolders: Map<string, WebhookRecord>;
}
