import { canonicalJson, sha256Hex } from '../../core/canonical-json.ts';
import type { AutomationDef, EnvironmentDef, Snapshot, WebhookDef } from '../../core/snapshot.ts';
import type { PlanInput, WebhookRecord } from './state.ts';

/**
 * The planner (docs/plan-apply.md): from the runtime's current records and a validated snapshot,
 * the changes per resource (create / update with a field-level diff / delete / no-op) and the
 * writes that apply performs. Pure: no SQL, no clock, no randomness (new UIDs are assigned by the
 * store).
 *
 * Diff fields are the definitions files' own keys (`secretName`, `triggers`, ...); the two runtime
 * bindings that apply also sets are `secret_version` and `enabled`, spelled as in the API.
 */

export type ResourceKind = 'factory' | 'webhook' | 'automation' | 'environment';
export type Action = 'create' | 'update' | 'delete' | 'no-op';

export interface FieldDiff {
  field: string;
  before: unknown;
  after: unknown;
}

export interface Change {
  resource: ResourceKind;
  name: string;
  action: Action;
  file: string;
  diff?: FieldDiff[];
}

/** The webhook fields that apply writes; UID, enabled and timestamps are decided separately. */
export interface WebhookFields {
  authMode: WebhookDef['authMode'];
  signatureScheme: string | null;
  secretName: string;
  secretVersion: number | null;
  deliveryIdHeader: string | null;
  description: string | null;
  sourceFile: string;
}

/** The writes of one apply; the store performs them in one transaction. */
export interface ApplyOps {
  factory: { name: string; description: string | null; create: boolean; update: boolean };
  webhookCreates: { name: string; pinnedUid: string | null; fields: WebhookFields; enabled: boolean }[];
  webhookUpdates: { uid: string; fields: WebhookFields; enabled: boolean }[];
  webhookDeletes: string[];
  automationUpserts: AutomationDef[];
  automationDeletes: string[];
  environmentUpserts: EnvironmentDef[];
  environmentDeletes: string[];
}

export interface PlanResult {
  changes: Change[];
  notes: string[];
  ops: ApplyOps;
  /** False when applying would write nothing (every change is a no-op). */
  changed: boolean;
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** Field-by-field differences between two flat records, in the order of `fields`. */
function diffFields(fields: string[], before: Record<string, unknown>, after: Record<string, unknown>): FieldDiff[] {
  const out: FieldDiff[] = [];
  for (const field of fields) {
    const b = before[field] ?? null;
    const a = after[field] ?? null;
    if (!same(a, b)) out.push({ field, before: b, after: a });
  }
  return out;
}

const WEBHOOK_FIELDS = ['authMode', 'signatureScheme', 'secretName', 'deliveryIdHeader', 'description', 'secret_version', 'enabled'];
const AUTOMATION_FIELDS = ['title', 'enabled', 'environment', 'triggers', 'schedules', 'notify', 'prompt', 'file'];
const ENVIRONMENT_FIELDS = ['description', 'repos', 'setup', 'agent', 'env', 'file'];

function webhookView(f: WebhookFields, enabled: boolean): Record<string, unknown> {
  return {
    authMode: f.authMode,
    signatureScheme: f.signatureScheme,
    secretName: f.secretName,
    deliveryIdHeader: f.deliveryIdHeader,
    description: f.description,
    secret_version: f.secretVersion,
    enabled,
  };
}

function automationView(a: { title?: string | null; enabled: boolean; environment: string; triggers: unknown; schedules?: unknown[]; notify?: { url: string; secretName: string }; prompt: string }, file: string) {
  const schedules = a.schedules?.length ? a.schedules : null;
  const notify = a.notify ? { url: a.notify.url, secretName: a.notify.secretName } : null;
  return { title: a.title ?? null, enabled: a.enabled, environment: a.environment, triggers: a.triggers, schedules, notify, prompt: a.prompt, file };
}

function environmentView(e: EnvironmentDef) {
  return { description: e.description ?? null, repos: e.repos, setup: e.setup, agent: e.agent, env: e.env, file: e.source.file };
}

/**
 * Computes the plan. Call it only after `checkAgainstRuntime` found no problem: it assumes every
 * secret exists and every pinned UID is free.
 */
export function computePlan(snapshot: Snapshot, input: PlanInput): PlanResult {
  const changes: Change[] = [];
  const notes: string[] = [];
  const factoryName = snapshot.factory.name;
  const description = snapshot.factory.description ?? null;
  const factoryFile = snapshot.factory.source.file;

  const ops: ApplyOps = {
    factory: { name: factoryName, description, create: !input.factory, update: false },
    webhookCreates: [],
    webhookUpdates: [],
    webhookDeletes: [],
    automationUpserts: [],
    automationDeletes: [],
    environmentUpserts: [],
    environmentDeletes: [],
  };

  if (!input.factory) {
    changes.push({ resource: 'factory', name: factoryName, action: 'create', file: factoryFile, diff: description === null ? [] : [{ field: 'description', before: null, after: description }] });
  } else {
    const diff = diffFields(['description'], { description: input.factory.description }, { description });
    ops.factory.update = diff.length > 0;
    changes.push({ resource: 'factory', name: factoryName, action: diff.length ? 'update' : 'no-op', file: factoryFile, ...(diff.length ? { diff } : {}) });
  }

  // Environments first: automations refer to them.
  const envs = new Map(input.environments.map((e) => [e.name, e]));
  for (const env of snapshot.environments) {
    const current = envs.get(env.name);
    if (!current) {
      ops.environmentUpserts.push(env);
      changes.push({ resource: 'environment', name: env.name, action: 'create', file: env.source.file, diff: diffFields(ENVIRONMENT_FIELDS, {}, environmentView(env)) });
      continue;
    }
    const diff = diffFields(ENVIRONMENT_FIELDS, environmentView(current.def), environmentView(env));
    if (diff.length) ops.environmentUpserts.push(env);
    changes.push({ resource: 'environment', name: env.name, action: diff.length ? 'update' : 'no-op', file: env.source.file, ...(diff.length ? { diff } : {}) });
  }
  const wantedEnvs = new Set(snapshot.environments.map((e) => e.name));
  for (const env of input.environments) {
    if (wantedEnvs.has(env.name)) continue;
    ops.environmentDeletes.push(env.name);
    changes.push({ resource: 'environment', name: env.name, action: 'delete', file: env.def.source.file });
  }

  const live = new Map(input.webhooks.map((w) => [w.name, w]));
  const created: string[] = [];
  for (const w of snapshot.webhooks) {
    const version = input.secrets.get(w.secretName)?.version ?? null;
    const fields: WebhookFields = {
      authMode: w.authMode,
      signatureScheme: w.signatureScheme ?? null,
      secretName: w.secretName,
      secretVersion: version,
      deliveryIdHeader: w.deliveryIdHeader ?? null,
      description: w.description ?? null,
      sourceFile: w.source.file,
    };
    const current = live.get(w.name);
    if (!current) {
      // A webhook whose secret is pending starts disabled; so does one whose file says enabled: false.
      const enabled = version !== null && w.enabled !== false;
      ops.webhookCreates.push({ name: w.name, pinnedUid: w.uid ?? null, fields, enabled });
      created.push(w.name);
      changes.push({ resource: 'webhook', name: w.name, action: 'create', file: w.source.file, diff: diffFields(WEBHOOK_FIELDS, {}, webhookView(fields, enabled)) });
      if (version === null) notes.push(`webhook '${w.name}' is created disabled: team secret '${w.secretName}' has no value yet; set it with \`factory secret update ${w.secretName}\`, then apply again.`);
      continue;
    }
    // enabled in the file is the state at every apply; without it the runtime toggle stays as it is
    // (docs/definitions.md#every-warp-key). A pending secret holds the webhook disabled either way.
    const enabled = w.enabled === undefined ? nextEnabled(current, version) : w.enabled && version !== null;
    const diff = diffFields(WEBHOOK_FIELDS, webhookView(currentFields(current), current.enabled), webhookView(fields, enabled));
    const fileMoved = current.sourceFile !== fields.sourceFile;
    if (diff.length || fileMoved) ops.webhookUpdates.push({ uid: current.uid, fields, enabled });
    changes.push({ resource: 'webhook', name: w.name, action: diff.length ? 'update' : 'no-op', file: w.source.file, ...(diff.length ? { diff } : {}) });
  }
  const wantedHooks = new Set(snapshot.webhooks.map((w) => w.name));
  const deleted: WebhookRecord[] = [];
  for (const w of input.webhooks) {
    if (wantedHooks.has(w.name)) continue;
    deleted.push(w);
    ops.webhookDeletes.push(w.uid);
    changes.push({ resource: 'webhook', name: w.name, action: 'delete', file: w.sourceFile ?? `webhooks/${w.name}.yaml` });
  }
  if (deleted.length && created.length) {
    notes.push(
      `rename is not supported: ${list(deleted.map((w) => `'${w.name}' (${w.uid})`))} ${deleted.length > 1 ? 'are' : 'is'} deleted and stop${deleted.length > 1 ? '' : 's'} accepting deliveries, ` +
        `and ${list(created.map((n) => `'${n}'`))} ${created.length > 1 ? 'are' : 'is'} created with a new UID; senders must switch to the new URL (docs/definitions.md).`,
    );
  }

  const autos = new Map(input.automations.map((a) => [a.name, a]));
  for (const a of snapshot.automations) {
    const current = autos.get(a.name);
    const after = automationView(a, a.source.file);
    if (!current) {
      ops.automationUpserts.push(a);
      changes.push({ resource: 'automation', name: a.name, action: 'create', file: a.source.file, diff: diffFields(AUTOMATION_FIELDS, {}, after) });
      continue;
    }
    const diff = diffFields(AUTOMATION_FIELDS, automationView(current, current.sourceFile), after);
    if (diff.length) ops.automationUpserts.push(a);
    changes.push({ resource: 'automation', name: a.name, action: diff.length ? 'update' : 'no-op', file: a.source.file, ...(diff.length ? { diff } : {}) });
  }
  const wantedAutos = new Set(snapshot.automations.map((a) => a.name));
  for (const a of input.automations) {
    if (wantedAutos.has(a.name)) continue;
    ops.automationDeletes.push(a.name);
    changes.push({ resource: 'automation', name: a.name, action: 'delete', file: a.sourceFile });
  }

  notes.push(...silentTriggerNotes(snapshot, input));
  const changed = changes.some((c) => c.action !== 'no-op') || ops.webhookUpdates.length > 0;
  return { changes, notes, ops, changed };
}

/**
 * `enabled` is a runtime toggle that apply leaves alone (docs/definitions.md,
 * docs/ingress.md#webhook-lifecycle), with one exception each way: a webhook held disabled because
 * its secret was pending is enabled once the secret has a value, and a signature webhook re-bound
 * to a pending secret is disabled.
 */
function nextEnabled(current: WebhookRecord, version: number | null): boolean {
  if (version === null) return false;
  if (current.secretVersion === null && !current.enabled) return true;
  return current.enabled;
}

function currentFields(w: WebhookRecord): WebhookFields {
  return {
    authMode: w.authMode,
    signatureScheme: w.signatureScheme,
    secretName: w.secretName,
    secretVersion: w.secretVersion,
    deliveryIdHeader: w.deliveryIdHeader,
    description: w.description,
    sourceFile: w.sourceFile ?? '',
  };
}

/** A trigger UID that names no webhook of this factory is a warning: it never fires (docs/plan-apply.md#changes). */
function silentTriggerNotes(snapshot: Snapshot, input: PlanInput): string[] {
  const uids = new Set<string>();
  const wanted = new Set(snapshot.webhooks.map((w) => w.name));
  for (const w of input.webhooks) if (wanted.has(w.name)) uids.add(w.uid);
  for (const w of snapshot.webhooks) if (w.uid) uids.add(w.uid);
  const notes: string[] = [];
  for (const a of snapshot.automations) {
    a.triggers.forEach((t, i) => {
      const uid = t.filter.webhook_ids[0];
      if (!uids.has(uid)) notes.push(`warning: ${a.source.file}: trigger ${i + 1} selects ${uid}, which is no webhook of factory '${snapshot.factory.name}'; it will never fire.`);
    });
  }
  return notes;
}

function list(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * The runtime state a plan was made against: the factory's generation (bumped by every apply that
 * changes something) and a hash of every fact the plan depends on, so that `apply --plan` refuses
 * when anything it relied on changed since, including a secret update (docs/plan-apply.md).
 */
export function baseRevision(input: PlanInput): string {
  const facts = canonicalJson({
    factory: input.factory ?? null,
    webhooks: input.webhooks,
    automations: input.automations,
    environments: input.environments,
    secrets: [...input.secrets.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    environmentOwners: [...input.environmentOwners.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    pinnedUidHolders: [...input.pinnedUidHolders.keys()].sort(),
  });
  return `${input.factory?.generation ?? 0}-${sha256Hex(facts).slice(0, 16)}`;
}
