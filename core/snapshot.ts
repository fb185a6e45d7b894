/**
 * The compiled snapshot: what `factory build` writes and what plan/apply send to the runtime.
 * schemas/snapshot.schema.json is its contract; test/core/snapshot.test.ts checks that these
 * types and the schema agree on the examples. Keys are camelCase where they mirror a file key
 * (authMode, secretName, ...) and snake_case for snapshot-level fields
 * (docs/definitions.md#the-snapshot).
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

/** Spellings accepted in webhook files; the snapshot holds the canonical one (SIGNATURE_SCHEMES). */
export const SCHEME_ALIASES: Readonly<Record<string, SignatureScheme>> = { standard_webhooks: 'standard-webhooks' };

export type AgentFormat = 'text' | 'claude-stream-json' | 'codex-json';

/** An environment's network in the sandbox (docs/security.md#network): `none` (loopback only) or `open`. */
export type NetworkPolicy = 'none' | 'open';

/** A JSON value as found in a payload filter or a delivery body. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where a resource came from: its file, relative to the repo root, with `/` separators. */
export interface SourceRef {
  file: string;
}

export interface WebhookDef {
  name: string;
  authMode: AuthMode;
  /** As written in the file: with it, every apply sets the webhook to it; without it, the runtime toggle stays. */
  enabled?: boolean;
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

/** A `schedule`/`cron_fired` trigger: five cron fields or a descriptor (@daily, @every 1h), UTC. */
export interface ScheduleDef {
  name?: string;
  cron: string;
}

/** A trigger of a provider this runtime validates but does not serve (github, slack, ...), as written. */
export interface InactiveTrigger {
  provider: string;
  event: string;
  filter?: { [key: string]: Json };
}

/** Warp's harness; `model: X` is compiled to `{type: oz, model: X}` and `claude-code` to `claude`. */
export interface HarnessDef {
  type: 'oz' | 'claude' | 'codex' | 'gemini';
  model?: string;
  reasoningLevel?: string;
  auth?: { source: 'managedSecret' | 'workerEnvironment'; secretName?: string };
}

/** The execution keys of agentDefaults, an agent and an automation, as written (normalised). */
export interface ExecutionSettings {
  harness?: HarnessDef;
  runner?: string;
  environmentId?: string;
  secrets?: string[];
  mcpServers?: { [name: string]: { warpId: string } };
  workerHost?: string;
}

export interface AutomationDef {
  name: string;
  title?: string;
  enabled: boolean;
  /** The environment runs execute in: `environment`, or an environmentId naming one of the repo. */
  environment: string;
  /** The agent that handles its runs, when the automation or the repo names one (default: the foreman). */
  agent?: string;
  /** The automation's own execution overrides. */
  execution?: ExecutionSettings;
  /** Where its runs report their state changes (docs/automations.md#notify). */
  notify?: AutomationNotify;
  triggers: WebhookTrigger[];
  schedules?: ScheduleDef[];
  inactive_triggers?: InactiveTrigger[];
  prompt: string;
  source: SourceRef;
}

/** An automation's notify key: a URL and the team secret that signs what is sent there. */
export interface AutomationNotify {
  url: string;
  secretName: string;
}

/** An automation with nothing to run in here (no environment resolves): recorded, never started. */
export type InactiveAutomationDef = Omit<AutomationDef, 'environment'>;

export const AGENT_TYPES = ['CUSTOM', 'FOREMAN', 'TRIAGE', 'SPEC', 'IMPLEMENT', 'REVIEW', 'VERIFY'] as const;
export type AgentType = (typeof AGENT_TYPES)[number];

/** agents/<name>/agent.md: the front matter and the body (its standing instructions). */
export interface AgentDef {
  name: string;
  description?: string;
  /** `MAIN` is compiled to `FOREMAN`; default `CUSTOM`. */
  agentType: AgentType;
  credentialStrategy?: 'EXECUTOR' | 'CREATOR';
  execution?: ExecutionSettings;
  instructions: string;
  source: SourceRef;
}

/** A SKILL.md: for every agent (skills/<name>/) or for one (`agent`: agents/<agent>/skills/<name>/). */
export interface SkillDef {
  name: string;
  agent?: string;
  description: string;
  license?: string;
  compatibility?: string;
  allowedTools?: string;
  metadata?: { [key: string]: string };
  instructions: string;
  source: SourceRef;
}

/** runners/<name>.yaml, with Warp's defaults filled in (linux, x86_64; macOS aarch64, version 26). */
export interface RunnerDef {
  name: string;
  description?: string;
  setupCommands: string[];
  instanceShape?: { vcpus?: number; memoryGb?: number };
  platform: { os: 'linux' | 'macos'; arch: 'x86_64' | 'aarch64'; linux?: { dockerImage: string }; mac?: { version: string } };
  source: SourceRef;
}

/** Something validated that this runtime does not act on: a key, a trigger, a file. `plan` lists them. */
export interface InactiveItem {
  file: string;
  /** JSON pointer into the file (front matter for Markdown); '' for the whole file. */
  pointer: string;
  reason: string;
}

/** factory.yaml's Warp keys (v1alpha1), recorded as written. */
export interface FactoryDef {
  name: string;
  description?: string;
  schemaVersion?: 'v1alpha1';
  alias?: string;
  credentialStrategy?: 'EXECUTOR' | 'CREATOR';
  repositories?: { owner: string; name: string }[];
  secrets?: string[];
  mcpServers?: { [name: string]: { warpId: string } };
  cloudProviders?: { [provider: string]: { [key: string]: string } };
  integrations?: { type: 'slack' | 'linear' | 'jira' }[];
  agentDefaults?: ExecutionSettings;
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
  /** Present only when the file sets it; absent means `none`. */
  network?: NetworkPolicy;
  /** Set on an environment the compiler made for a Warp agent (docs/definitions.md#warp-agents-run-here). */
  warp?: WarpExecution;
  source: SourceRef;
}

/** What the executor adds at run start to an environment made for a Warp agent. */
export interface WarpExecution {
  agent: string;
  /** Set when the environment carries an automation's own harness or runner. */
  automation?: string;
  harness: 'claude' | 'codex';
  runner?: string;
  /** factory.yaml's repositories, cloned from the runtime's --repository-base. */
  repositories: { owner: string; name: string }[];
  /** The agent's body and the skills it may use, put before each run's prompt. */
  instructions: string;
}

export interface Snapshot {
  format_version: number;
  factory: FactoryDef;
  webhooks: WebhookDef[];
  automations: AutomationDef[];
  environments: EnvironmentDef[];
  /** Warp's layout; each array is left out when empty, so a repo without these files compiles as before. */
  agents?: AgentDef[];
  skills?: SkillDef[];
  runners?: RunnerDef[];
  inactive_automations?: InactiveAutomationDef[];
  inactive?: InactiveItem[];
  /** sha256 hex of each source file's bytes, keyed by repo-relative path. */
  sources: { [file: string]: string };
  digest: string;
}
