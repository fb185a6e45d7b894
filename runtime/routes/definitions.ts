import type { Context } from 'koa';
import { FactoryError, notFound, type FieldError } from '../../core/errors.ts';
import type { Snapshot } from '../../core/snapshot.ts';
import { checkAgainstRuntime, checkSnapshot, isSigningKey, isUrlSafeToken, type CheckError } from '../definitions/checks.ts';
import { baseRevision, computePlan, type Change } from '../definitions/plan.ts';
import type { PlanInput, SecretFacts, WebhookRecord } from '../definitions/state.ts';
import { webhookView } from '../definitions/views.ts';
import { canManageFactory, principalOf, requireScope } from '../http/auth.ts';
import { readJsonBody } from '../http/body.ts';
import { DEFINITIONS_LOCK } from '../store/definitions.ts';
import type { Store } from '../store/index.ts';
import type { RouteModule } from './index.ts';
import { unknownWebhookDetail } from '../ingress/lifecycle.ts';
import { queryParams } from '../http/query.ts';
import { charCount } from '../../core/text.ts';

/**
 * Plan and apply (docs/plan-apply.md) and the read side of webhooks (`webhook list|show`,
 * README.md#commands).
 *
 * An apply reads the runtime's state, checks, plans and writes in one transaction that first takes
 * the `definitions` lock (store.lockUntilCommit): no other request of this process can run in
 * between (no `await` inside), and no other replica on the same PostgreSQL database can apply (or
 * create a webhook) until it commits, so two applies against one base revision never both win
 * (docs/plan-apply.md#concurrent-applies). The snapshot's own validation runs before, outside it.
 */
export const definitionsRoutes: RouteModule = (router, deps) => {
  const { store, config } = deps;
  const factoryParam = { factory: (ctx: Context) => String(ctx.params.name) };
  // A snapshot grows with the repo (about 540 bytes per automation): plan and apply take gzip and a
  // larger cap than the other routes (docs/plan-apply.md#large-factories).
  const definitionsBody = { limit: config.limits.definitionsBodyBytes, gzip: true };

  router.post('/api/v1/factories/:name/plan', requireScope('manage', factoryParam), async (ctx) => {
    const req = parseRequest(await readJsonBody(ctx, definitionsBody));
    const snapshot = validSnapshot(req.snapshot, String(ctx.params.name));
    const input = checkedInput(store, snapshot, config.limits.webhooksPerFactory, (f) => canManageFactory(principalOf(ctx), f));
    const plan = computePlan(snapshot, input);
    ctx.body = {
      factory: snapshot.factory.name,
      base_revision: baseRevision(input),
      revision: input.factory?.revision ?? null,
      digest: snapshot.digest,
      changed: plan.changed,
      summary: summarize(plan.changes),
      changes: plan.changes,
      notes: plan.notes,
    };
  });

  router.post('/api/v1/factories/:name/apply', requireScope('manage', factoryParam), async (ctx) => {
    const req = parseRequest(await readJsonBody(ctx, definitionsBody));
    const name = String(ctx.params.name);
    const mayName = (f: string) => canManageFactory(principalOf(ctx), f);
    const snapshot = validSnapshot(req.snapshot, name);
    const { plan, before, after } = store.transaction(() => {
      store.lockUntilCommit(DEFINITIONS_LOCK);
      const input = checkedInput(store, snapshot, config.limits.webhooksPerFactory, mayName);
      const before = baseRevision(input);
      if (req.baseRevision !== undefined && req.baseRevision !== before) {
        throw new FactoryError('conflict', 'The runtime changed since this plan was made; nothing was applied. Plan again.', {
          errors: [{ file: '', pointer: '/base_revision', code: 'plan.stale', message: `the plan was made against ${req.baseRevision}; the runtime is now at ${before}` }],
        });
      }
      const plan = computePlan(snapshot, input);
      if (plan.changed) store.defs.applySnapshot(plan.ops, { revision: req.revision ?? null, digest: snapshot.digest });
      return { plan, before, after: plan.changed ? baseRevision(gather(store, snapshot)) : before };
    });
    ctx.body = {
      factory: name,
      applied: plan.changed,
      previous_base_revision: before,
      base_revision: after,
      revision: store.defs.getFactory(name)?.revision ?? null,
      digest: snapshot.digest,
      summary: summarize(plan.changes),
      changes: plan.changes,
      notes: plan.notes,
      webhooks: store.defs.listWebhooks(name).map((w) => webhookView(w, config.baseUrl)),
    };
  });

  router.get('/api/v1/webhooks', requireScope('manage'), queryParams(['factory', 'include_deleted'], ['include_deleted']), (ctx) => {
    const principal = principalOf(ctx);
    const factory = typeof ctx.query.factory === 'string' ? ctx.query.factory : undefined;
    const includeDeleted = ctx.query.include_deleted === 'true';
    const hooks = store.defs.listWebhooks(factory, { includeDeleted }).filter((w) => canManageFactory(principal, w.factory));
    ctx.body = { webhooks: hooks.map((w) => webhookView(w, config.baseUrl)) };
  });

  router.get('/api/v1/webhooks/:uid', requireScope('manage'), (ctx) => {
    const w = store.defs.getWebhookByUid(String(ctx.params.uid));
    // A webhook of a factory this key may not manage looks exactly like an unknown one.
    if (!w || !canManageFactory(principalOf(ctx), w.factory)) throw notFound(unknownWebhookDetail(String(ctx.params.uid)));
    ctx.body = webhookView(w, config.baseUrl);
  });
};

interface PlanRequest {
  snapshot: unknown;
  baseRevision?: string;
  revision?: string;
}

function parseRequest(body: unknown): PlanRequest {
  const errors: FieldError[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new FactoryError('invalid_request', 'The body must be a JSON object {snapshot, base_revision?, revision?}.');
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (!['snapshot', 'base_revision', 'revision'].includes(key)) errors.push({ pointer: `/${key}`, message: `unknown key '${key}'` });
  }
  if (!('snapshot' in b)) errors.push({ pointer: '/snapshot', message: "missing required key 'snapshot'" });
  if (b.base_revision !== undefined && typeof b.base_revision !== 'string') errors.push({ pointer: '/base_revision', message: 'must be a string' });
  if (b.revision !== undefined && (typeof b.revision !== 'string' || b.revision.length === 0 || charCount(b.revision) > 200)) {
    errors.push({ pointer: '/revision', message: 'must be a string of 1 to 200 characters' });
  }
  if (errors.length) throw new FactoryError('invalid_request', 'The request body is not valid.', { errors });
  return { snapshot: b.snapshot, baseRevision: b.base_revision as string | undefined, revision: b.revision as string | undefined };
}

/** The snapshot, validated on its own; throws a problem naming every file and key. */
function validSnapshot(value: unknown, name: string): Snapshot {
  const checked = checkSnapshot(value, name);
  if (!checked.ok) throw checkFailure('The snapshot is not valid; nothing was changed.', checked.errors);
  return checked.snapshot;
}

/** The runtime's state for `snapshot`, checked against it; throws a problem naming every file and key. */
function checkedInput(store: Store, snapshot: Snapshot, maxWebhooks: number, mayName: (factory: string) => boolean): PlanInput {
  const input = gather(store, snapshot);
  const errors = checkAgainstRuntime(snapshot, input, { maxWebhooks, mayName });
  if (errors.length) {
    throw checkFailure(`The snapshot failed ${errors.length} runtime check${errors.length > 1 ? 's' : ''}; nothing was changed.`, errors);
  }
  return input;
}

function checkFailure(detail: string, errors: CheckError[]): FactoryError {
  const code = errors.some((e) => e.conflict) ? 'conflict' : 'invalid_request';
  return new FactoryError(code, detail, { errors: errors.map(({ file, pointer, code, message }) => ({ file, pointer, code, message })) });
}

/** Reads every fact the checks and the planner need (runtime/definitions/state.ts PlanInput). */
function gather(store: Store, snapshot: Snapshot): PlanInput {
  const name = snapshot.factory.name;
  const urlTokenSecrets = new Set(snapshot.webhooks.filter((w) => w.authMode === 'url_token').map((w) => w.secretName));
  const signingKeySecrets = new Set(snapshot.webhooks.filter((w) => w.signatureScheme === 'standard-webhooks').map((w) => w.secretName));
  const secretNames = new Set<string>(snapshot.webhooks.map((w) => w.secretName));
  for (const env of snapshot.environments) {
    for (const v of Object.values(env.env)) if (typeof v === 'object') secretNames.add(v.secret);
  }
  for (const a of snapshot.automations) if (a.notify) secretNames.add(a.notify.secretName);
  const secrets = new Map<string, SecretFacts>();
  for (const s of [...secretNames].sort()) {
    const meta = store.secrets.get(s);
    if (!meta) continue;
    const facts: SecretFacts = { version: meta.has_value ? meta.current_version : null, factories: meta.factories };
    // The value is read here only to judge it; it goes no further than this boolean.
    if (meta.has_value && urlTokenSecrets.has(s)) facts.urlSafe = isUrlSafeToken(store.secrets.reveal(s) ?? '');
    if (meta.has_value && signingKeySecrets.has(s)) facts.signingKey = isSigningKey(store.secrets.reveal(s) ?? '');
    secrets.set(s, facts);
  }
  const environmentOwners = new Map<string, string>();
  for (const id of new Set([...snapshot.environments.map((e) => e.name), ...snapshot.automations.map((a) => a.environment)])) {
    const rec = store.defs.getEnvironmentRecord(id);
    if (rec) environmentOwners.set(id, rec.factory);
  }
  const pinnedUidHolders = new Map<string, WebhookRecord>();
  for (const w of snapshot.webhooks) {
    const holder = w.uid ? store.defs.getWebhookByUid(w.uid) : undefined;
    if (holder) pinnedUidHolders.set(holder.uid, holder);
  }
  return {
    factory: store.defs.getFactory(name),
    webhooks: store.defs.listWebhooks(name),
    automations: store.defs.listAutomations(name),
    environments: store.defs.listEnvironments(name),
    secrets,
    environmentOwners,
    pinnedUidHolders,
  };
}

function summarize(changes: Change[]): Record<'create' | 'update' | 'delete' | 'no_op', number> {
  const out = { create: 0, update: 0, delete: 0, no_op: 0 };
  for (const c of changes) out[c.action === 'no-op' ? 'no_op' : c.action]++;
  return out;
}
