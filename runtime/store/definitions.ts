import { iso } from '../clock.ts';
import type { StoreContext } from './index.ts';
import { CHANNELS } from './channels.ts';
import { isConstraintError } from './db.ts';
import { newId } from '../../core/ids.ts';
import { conflict, notFound } from '../../core/errors.ts';
import type { AuthMode, AutomationNotify, EnvironmentDef, ScheduleDef, WebhookTrigger } from '../../core/snapshot.ts';
import type { ApplyOps } from '../definitions/plan.ts';
import type { AutomationRecord, EnvironmentRecord, FactoryRecord, ManagedBy, WebhookRecord } from '../definitions/state.ts';
import { echoed } from '../../core/text.ts';

/**
 * Definitions as runtime state (`store.defs`): factories, webhooks, automations, environments
 * (docs/plan-apply.md, docs/ingress.md#webhook-lifecycle). The only SQL for them. `applySnapshot`
 * performs all of one apply's writes in one transaction; the webhook lifecycle methods are the
 * primitives ingress and the webhook API use.
 */
/**
 * The lock (Store.lockUntilCommit) a check-then-write of definitions holds until it commits: an
 * apply, and a webhook created through the API. Replicas on one PostgreSQL database take turns.
 */
export const DEFINITIONS_LOCK = 'definitions';

export interface DefinitionsStore {
  getFactory(name: string): FactoryRecord | undefined;
  listFactories(): FactoryRecord[];
  /** Creates a factory (an API-managed one, typically); 409 when the name exists. */
  createFactory(name: string, managedBy: ManagedBy, description?: string | null): FactoryRecord;
  /** Live webhooks (and deleted ones with includeDeleted), by factory then name. */
  listWebhooks(factory?: string, options?: { includeDeleted?: boolean }): WebhookRecord[];
  /** A webhook by UID, live or deleted (callers check `deletedAt`). */
  getWebhookByUid(uid: string): WebhookRecord | undefined;
  /** A live webhook by factory and name. */
  getWebhookByName(factory: string, name: string): WebhookRecord | undefined;
  /** Inserts an API-created webhook; the UID is generated unless given. */
  insertWebhook(input: NewWebhook): WebhookRecord;
  /** Changes runtime fields of a live webhook (enable/disable, secret binding, ...). */
  updateWebhook(uid: string, patch: WebhookPatch): WebhookRecord;
  /** Marks a live webhook deleted; its UID stays taken forever. */
  deleteWebhook(uid: string): WebhookRecord;
  listAutomations(factory?: string): AutomationRecord[];
  /** The environment a run executes in, or undefined (docs/api.md: an unknown one is a 400). */
  getEnvironment(id: string): EnvironmentDef | undefined;
  getEnvironmentRecord(id: string): EnvironmentRecord | undefined;
  listEnvironments(factory?: string): EnvironmentRecord[];
  /** Performs one apply's writes in one transaction; returns the UIDs of created webhooks by name. */
  applySnapshot(ops: ApplyOps, meta: { revision: string | null; digest: string }): { created: Map<string, string> };
  /**
   * THE invalidation signal for anything that caches definitions: a number that changes with every
   * write to factories, webhooks, automations or environments (apply, webhook create, enable,
   * disable, rotate, set-secret, delete). A cache built at one value is stale at any other. Kept in
   * memory: another replica's writes move it through `invalidate()`, on its NOTIFY
   * (docs/deploy.md#several-replicas).
   */
  generation(): number;
  /**
   * Drops the caches: another replica changed the definitions (docs/deploy.md#several-replicas).
   * The next read reloads them, in a new generation.
   */
  invalidate(): void;
  /**
   * The webhook the ingress serves at `uid` (live and enabled), from a cache rebuilt once per
   * generation, so a delivery runs no query for it; undefined for unknown, disabled or deleted.
   * Shared and frozen: never modify it.
   */
  servedWebhook(uid: string): Readonly<WebhookRecord> | undefined;
  /**
   * The factory's automations as `listAutomations(factory)` gives them, from a cache rebuilt once
   * per generation (their triggers parsed once, not per delivery). Shared and frozen.
   */
  cachedAutomations(factory: string): readonly Readonly<AutomationRecord>[];
}

export interface NewWebhook {
  factory: string;
  name: string;
  authMode: AuthMode;
  signatureScheme?: string | null;
  secretName: string;
  secretVersion: number | null;
  deliveryIdHeader?: string | null;
  description?: string | null;
  enabled: boolean;
  managedBy: ManagedBy;
  sourceFile?: string | null;
  uid?: string;
}

/**
 * A change to a webhook. A new `secretVersion` clears the previous version of a graceful rotation
 * unless the patch sets `previousSecretVersion` and `previousSecretUntil` itself.
 */
export type WebhookPatch = Partial<
  Pick<WebhookRecord, 'enabled' | 'secretName' | 'secretVersion' | 'previousSecretVersion' | 'previousSecretUntil' | 'description' | 'deliveryIdHeader'>
>;

interface FactoryRow { name: string; managed_by: ManagedBy; description: string | null; revision: string | null; generation: number; digest: string | null; applied_at: string | null; created_at: string }
interface WebhookRow { uid: string; factory: string; name: string; auth_mode: AuthMode; signature_scheme: string | null; secret_name: string; secret_version: number | null; previous_secret_version: number | null; previous_secret_until: string | null; delivery_id_header: string | null; description: string | null; enabled: number; managed_by: ManagedBy; source_file: string | null; created_at: string; updated_at: string; deleted_at: string | null }
interface AutomationRow { factory: string; name: string; title: string | null; enabled: number; environment: string; triggers: string; schedules: string | null; notify: string | null; prompt: string; source_file: string; created_at: string; updated_at: string }
interface EnvironmentRow { name: string; factory: string; spec: string; created_at: string; updated_at: string }

const toFactory = (r: FactoryRow): FactoryRecord => ({
  name: r.name, managedBy: r.managed_by, description: r.description, revision: r.revision, generation: r.generation,
  digest: r.digest, appliedAt: r.applied_at, createdAt: r.created_at,
});
const toWebhook = (r: WebhookRow): WebhookRecord => ({
  uid: r.uid, factory: r.factory, name: r.name, authMode: r.auth_mode, signatureScheme: r.signature_scheme,
  secretName: r.secret_name, secretVersion: r.secret_version, previousSecretVersion: r.previous_secret_version ?? null,
  previousSecretUntil: r.previous_secret_until ?? null, deliveryIdHeader: r.delivery_id_header,
  description: r.description, enabled: r.enabled === 1, managedBy: r.managed_by, sourceFile: r.source_file,
  createdAt: r.created_at, updatedAt: r.updated_at, deletedAt: r.deleted_at,
});
const toAutomation = (r: AutomationRow): AutomationRecord => ({
  factory: r.factory, name: r.name, title: r.title, enabled: r.enabled === 1, environment: r.environment,
  triggers: JSON.parse(r.triggers) as WebhookTrigger[], ...(r.schedules ? { schedules: JSON.parse(r.schedules) as ScheduleDef[] } : {}),
  ...(r.notify ? { notify: JSON.parse(r.notify) as AutomationNotify } : {}),
  prompt: r.prompt, sourceFile: r.source_file,
  createdAt: r.created_at, updatedAt: r.updated_at,
});
const toEnvironment = (r: EnvironmentRow): EnvironmentRecord => ({
  name: r.name, factory: r.factory, def: JSON.parse(r.spec) as EnvironmentDef, createdAt: r.created_at, updatedAt: r.updated_at,
});

/** Built once per store (`store.defs`); prepares its statements once. */
export function createDefinitionsStore({ db, clock, announce }: StoreContext): DefinitionsStore {
  const q = {
    factory: db.prepare('SELECT * FROM factories WHERE name = ?'),
    factories: db.prepare('SELECT * FROM factories ORDER BY name'),
    insertFactory: db.prepare('INSERT INTO factories (name, managed_by, description, created_at) VALUES (?, ?, ?, ?)'),
    updateFactory: db.prepare('UPDATE factories SET description = ?, revision = ?, digest = ?, generation = generation + 1, applied_at = ? WHERE name = ?'),
    webhook: db.prepare('SELECT * FROM webhooks WHERE uid = ?'),
    webhookByName: db.prepare('SELECT * FROM webhooks WHERE factory = ? AND name = ? AND deleted_at IS NULL'),
    webhooksAll: db.prepare('SELECT * FROM webhooks WHERE (CAST(? AS TEXT) IS NULL OR factory = ?) AND (? = 1 OR deleted_at IS NULL) ORDER BY factory, name, created_at'),
    webhooksServed: db.prepare('SELECT * FROM webhooks WHERE deleted_at IS NULL AND enabled = 1'),
    insertWebhook: db.prepare(`INSERT INTO webhooks (uid, factory, name, auth_mode, signature_scheme, secret_name, secret_version,
      delivery_id_header, description, enabled, managed_by, source_file, created_at, updated_at)
      VALUES (@uid, @factory, @name, @authMode, @signatureScheme, @secretName, @secretVersion, @deliveryIdHeader,
      @description, @enabled, @managedBy, @sourceFile, @now, @now)`),
    applyWebhook: db.prepare(`UPDATE webhooks SET auth_mode = @authMode, signature_scheme = @signatureScheme, secret_name = @secretName,
      secret_version = @secretVersion, delivery_id_header = @deliveryIdHeader, description = @description, enabled = @enabled,
      previous_secret_version = CASE WHEN secret_version IS NOT DISTINCT FROM @secretVersion AND secret_name = @secretName THEN previous_secret_version END,
      previous_secret_until = CASE WHEN secret_version IS NOT DISTINCT FROM @secretVersion AND secret_name = @secretName THEN previous_secret_until END,
      source_file = @sourceFile, updated_at = @now WHERE uid = @uid AND deleted_at IS NULL`),
    patchWebhook: db.prepare(`UPDATE webhooks SET enabled = @enabled, secret_name = @secretName, secret_version = @secretVersion,
      previous_secret_version = @previousSecretVersion, previous_secret_until = @previousSecretUntil, description = @description, delivery_id_header = @deliveryIdHeader, updated_at = @now WHERE uid = @uid AND deleted_at IS NULL`),
    deleteWebhook: db.prepare('UPDATE webhooks SET deleted_at = ?, updated_at = ?, enabled = 0 WHERE uid = ? AND deleted_at IS NULL'),
    automations: db.prepare('SELECT * FROM automations WHERE (CAST(? AS TEXT) IS NULL OR factory = ?) ORDER BY factory, name'),
    upsertAutomation: db.prepare(`INSERT INTO automations (factory, name, title, enabled, environment, triggers, schedules, notify, prompt, source_file, created_at, updated_at)
      VALUES (@factory, @name, @title, @enabled, @environment, @triggers, @schedules, @notify, @prompt, @sourceFile, @now, @now)
      ON CONFLICT (factory, name) DO UPDATE SET title = excluded.title, enabled = excluded.enabled, environment = excluded.environment,
      triggers = excluded.triggers, schedules = excluded.schedules, notify = excluded.notify, prompt = excluded.prompt, source_file = excluded.source_file, updated_at = excluded.updated_at`),
    deleteAutomation: db.prepare('DELETE FROM automations WHERE factory = ? AND name = ?'),
    environment: db.prepare('SELECT * FROM environments WHERE name = ?'),
    environments: db.prepare('SELECT * FROM environments WHERE (CAST(? AS TEXT) IS NULL OR factory = ?) ORDER BY name'),
    upsertEnvironment: db.prepare(`INSERT INTO environments (name, factory, spec, created_at, updated_at) VALUES (@name, @factory, @spec, @now, @now)
      ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at WHERE environments.factory = excluded.factory`),
    deleteEnvironment: db.prepare('DELETE FROM environments WHERE name = ? AND factory = ?'),
  };
  const now = () => iso(clock.now());

  // The generation (see the interface). Bumped before every write, and once more on the next
  // microtask: a cache filled while a write's transaction was still open (it could yet roll back)
  // is dropped as soon as that transaction has ended, since transactions never span an await.
  let generation = 0;
  const bump = () => {
    generation += 1;
  };
  const changed = () => {
    bump();
    queueMicrotask(bump);
    announce(CHANNELS.definitions);
  };
  const cache = {
    generation: -1,
    webhooks: new Map<string, Readonly<WebhookRecord>>(),
    automations: new Map<string, readonly Readonly<AutomationRecord>[]>(),
  };
  const fresh = () => {
    if (cache.generation === generation) return cache;
    cache.generation = generation;
    cache.webhooks.clear();
    cache.automations.clear();
    for (const row of q.webhooksServed.all() as WebhookRow[]) cache.webhooks.set(row.uid, deepFreeze(toWebhook(row)));
    return cache;
  };

  const getWebhookByUid = (uid: string) => {
    const row = q.webhook.get(uid) as WebhookRow | undefined;
    return row && toWebhook(row);
  };
  const liveWebhook = (uid: string): WebhookRecord => {
    const w = getWebhookByUid(uid);
    if (!w || w.deletedAt) throw notFound(`webhook ${echoed(uid)} does not exist`);
    return w;
  };

  const insertWebhook = (input: NewWebhook): WebhookRecord => {
    const uid = input.uid ?? newId('wh');
    changed();
    try {
      q.insertWebhook.run({
        uid, factory: input.factory, name: input.name, authMode: input.authMode, signatureScheme: input.signatureScheme ?? null,
        secretName: input.secretName, secretVersion: input.secretVersion, deliveryIdHeader: input.deliveryIdHeader ?? null,
        description: input.description ?? null, enabled: input.enabled ? 1 : 0, managedBy: input.managedBy,
        sourceFile: input.sourceFile ?? null, now: now(),
      });
    } catch (err) {
      if (isConstraintError(err)) throw conflict(`webhook '${input.name}' or UID ${uid} already exists`);
      throw err;
    }
    return getWebhookByUid(uid)!;
  };

  const applyTx = db.transaction((ops: ApplyOps, meta: { revision: string | null; digest: string }) => {
    changed();
    const at = now();
    const f = ops.factory;
    if (f.create) q.insertFactory.run(f.name, 'definitions', f.description, at);
    q.updateFactory.run(f.description, meta.revision, meta.digest, at, f.name);
    for (const env of ops.environmentUpserts) {
      const { changes } = q.upsertEnvironment.run({ name: env.name, factory: f.name, spec: JSON.stringify(env), now: at });
      // The ON CONFLICT guard leaves another factory's environment alone; the checks should have
      // caught it, so this is a race with another writer: undo everything.
      if (changes === 0) throw conflict(`environment '${env.name}' belongs to another factory`);
    }
    for (const uid of ops.webhookDeletes) q.deleteWebhook.run(at, at, uid);
    const created = new Map<string, string>();
    for (const c of ops.webhookCreates) {
      const w = insertWebhook({ factory: f.name, name: c.name, ...c.fields, enabled: c.enabled, managedBy: 'definitions', uid: c.pinnedUid ?? undefined });
      created.set(c.name, w.uid);
    }
    for (const u of ops.webhookUpdates) {
      q.applyWebhook.run({ uid: u.uid, ...u.fields, enabled: u.enabled ? 1 : 0, now: at });
    }
    for (const name of ops.automationDeletes) q.deleteAutomation.run(f.name, name);
    for (const a of ops.automationUpserts) {
      q.upsertAutomation.run({
        factory: f.name, name: a.name, title: a.title ?? null, enabled: a.enabled ? 1 : 0, environment: a.environment,
        triggers: JSON.stringify(a.triggers), schedules: a.schedules?.length ? JSON.stringify(a.schedules) : null,
        notify: a.notify ? JSON.stringify({ url: a.notify.url, secretName: a.notify.secretName }) : null,
        prompt: a.prompt, sourceFile: a.source.file, now: at,
      });
    }
    for (const name of ops.environmentDeletes) q.deleteEnvironment.run(name, f.name);
    return { created };
  });

  return {
    getFactory(name) {
      const row = q.factory.get(name) as FactoryRow | undefined;
      return row && toFactory(row);
    },
    listFactories: () => (q.factories.all() as FactoryRow[]).map(toFactory),
    createFactory(name, managedBy, description = null) {
      changed();
      try {
        q.insertFactory.run(name, managedBy, description, now());
      } catch (err) {
        if (isConstraintError(err)) throw conflict(`factory '${name}' already exists`);
        throw err;
      }
      return toFactory(q.factory.get(name) as FactoryRow);
    },
    listWebhooks(factory, options = {}) {
      const f = factory ?? null;
      return (q.webhooksAll.all(f, f, options.includeDeleted ? 1 : 0) as WebhookRow[]).map(toWebhook);
    },
    getWebhookByUid,
    getWebhookByName(factory, name) {
      const row = q.webhookByName.get(factory, name) as WebhookRow | undefined;
      return row && toWebhook(row);
    },
    insertWebhook,
    updateWebhook(uid, patch) {
      const current = liveWebhook(uid);
      const w = { ...current, ...patch };
      // A grace belongs to the binding it was given with: another binding ends it.
      const rebound = w.secretVersion !== current.secretVersion || w.secretName !== current.secretName;
      if (rebound && patch.previousSecretVersion === undefined) w.previousSecretVersion = w.previousSecretUntil = null;
      changed();
      q.patchWebhook.run({
        uid, enabled: w.enabled ? 1 : 0, secretName: w.secretName, secretVersion: w.secretVersion,
        previousSecretVersion: w.previousSecretVersion, previousSecretUntil: w.previousSecretUntil,
        description: w.description, deliveryIdHeader: w.deliveryIdHeader, now: now(),
      });
      return getWebhookByUid(uid)!;
    },
    deleteWebhook(uid) {
      liveWebhook(uid);
      const at = now();
      changed();
      q.deleteWebhook.run(at, at, uid);
      return getWebhookByUid(uid)!;
    },
    listAutomations(factory) {
      const f = factory ?? null;
      return (q.automations.all(f, f) as AutomationRow[]).map(toAutomation);
    },
    getEnvironment(id) {
      const row = q.environment.get(id) as EnvironmentRow | undefined;
      return row && toEnvironment(row).def;
    },
    getEnvironmentRecord(id) {
      const row = q.environment.get(id) as EnvironmentRow | undefined;
      return row && toEnvironment(row);
    },
    listEnvironments(factory) {
      const f = factory ?? null;
      return (q.environments.all(f, f) as EnvironmentRow[]).map(toEnvironment);
    },
    applySnapshot: (ops, meta) => applyTx(ops, meta),
    generation: () => generation,
    invalidate: bump,
    servedWebhook: (uid) => fresh().webhooks.get(uid),
    cachedAutomations(factory) {
      const c = fresh();
      let list = c.automations.get(factory);
      if (!list) {
        list = Object.freeze((q.automations.all(factory, factory) as AutomationRow[]).map((r) => deepFreeze(toAutomation(r))));
        c.automations.set(factory, list);
      }
      return list;
    },
  };
}

/** Freezes a plain record and everything in it (cached records are shared by every reader). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
