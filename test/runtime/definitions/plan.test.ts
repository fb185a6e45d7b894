import { test } from 'node:test';
import assert from 'node:assert/strict';
import { baseRevision, computePlan } from '../../../runtime/definitions/plan.ts';
import type { PlanInput, WebhookRecord } from '../../../runtime/definitions/state.ts';
import { automation, emptyInput, environment, snapshot, webhook, UID_A, UID_B } from './fixture.ts';
import type { Snapshot } from '../../../core/snapshot.ts';

const summary = (changes: { resource: string; name: string; action: string }[]) => changes.map((c) => `${c.action} ${c.resource} ${c.name}`);

/** The runtime state right after applying `s` (what the store would hold). */
function applied(s: Snapshot, input: PlanInput = emptyInput()): PlanInput {
  const at = '2026-01-01T00:00:00.000Z';
  return {
    ...input,
    factory: { name: s.factory.name, managedBy: 'definitions', description: s.factory.description ?? null, revision: null, generation: 1, digest: s.digest, appliedAt: at, createdAt: at },
    webhooks: s.webhooks.map((w, i): WebhookRecord => ({
      uid: w.uid ?? `wh_${String.fromCharCode(99 + i).repeat(26)}`, factory: s.factory.name, name: w.name, authMode: w.authMode,
      signatureScheme: w.signatureScheme ?? null, secretName: w.secretName, secretVersion: input.secrets.get(w.secretName)?.version ?? null,
      deliveryIdHeader: w.deliveryIdHeader ?? null, description: w.description ?? null, enabled: true, managedBy: 'definitions',
      sourceFile: w.source.file, createdAt: at, updatedAt: at, deletedAt: null,
    })),
    automations: s.automations.map((a) => ({ factory: s.factory.name, name: a.name, title: a.title ?? null, enabled: a.enabled, environment: a.environment, triggers: a.triggers, prompt: a.prompt, sourceFile: a.source.file, createdAt: at, updatedAt: at })),
    environments: s.environments.map((e) => ({ name: e.name, factory: s.factory.name, def: e, createdAt: at, updatedAt: at })),
  };
}

test('a fresh runtime: everything is a create, with the pinned UID kept for the store', () => {
  const plan = computePlan(snapshot(), emptyInput());
  assert.deepEqual(summary(plan.changes), ['create factory demo', 'create environment sandbox', 'create webhook ci', 'create automation triage']);
  assert.equal(plan.changed, true);
  assert.deepEqual(plan.ops.webhookCreates.map((c) => [c.name, c.pinnedUid, c.enabled, c.fields.secretVersion]), [['ci', UID_A, true, 1]]);
  assert.deepEqual(plan.notes, []);
});

test('re-planning the applied snapshot changes nothing', () => {
  const s = snapshot();
  const plan = computePlan(s, applied(s));
  assert.equal(plan.changed, false);
  assert.ok(plan.changes.every((c) => c.action === 'no-op' && c.diff === undefined));
});

test('an edited field is an update with exactly that diff', () => {
  const before = snapshot();
  const after = snapshot({ webhooks: [webhook('ci', { uid: UID_A, description: 'CI events', deliveryIdHeader: 'X-Id' })] });
  const plan = computePlan(after, applied(before));
  const changed = plan.changes.filter((c) => c.action !== 'no-op');
  assert.deepEqual(changed, [{
    resource: 'webhook', name: 'ci', action: 'update', file: 'webhooks/ci.yaml',
    diff: [{ field: 'deliveryIdHeader', before: null, after: 'X-Id' }, { field: 'description', before: null, after: 'CI events' }],
  }]);
});

test('a new secret version re-binds the webhook (secret_version update); enabled stays as toggled', () => {
  const s = snapshot();
  const state = applied(s);
  state.webhooks[0].enabled = false;
  state.secrets.set('ci-secret', { version: 2 });
  const plan = computePlan(s, state);
  const change = plan.changes.find((c) => c.resource === 'webhook')!;
  assert.deepEqual(change.diff, [{ field: 'secret_version', before: 1, after: 2 }]);
  assert.deepEqual(plan.ops.webhookUpdates.map((u) => [u.uid, u.fields.secretVersion, u.enabled]), [[UID_A, 2, false]]);
});

test('a signature webhook with a pending secret is created disabled, then enabled once the secret has a value', () => {
  const s = snapshot({ webhooks: [webhook('gh', { authMode: 'signature', signatureScheme: 'github', secretName: 'gh', uid: UID_B })], automations: [] });
  const pending = emptyInput({ gh: { version: null } });
  const first = computePlan(s, pending);
  assert.equal(first.ops.webhookCreates[0].enabled, false);
  assert.match(first.notes.join('\n'), /created disabled/);
  const state = applied(s, pending);
  state.webhooks[0].enabled = false;
  state.secrets.set('gh', { version: 1 });
  const second = computePlan(s, state);
  assert.deepEqual(second.changes.find((c) => c.resource === 'webhook')!.diff, [
    { field: 'secret_version', before: null, after: 1 },
    { field: 'enabled', before: false, after: true },
  ]);
});

test('a removed file is a delete; a delete with a create says rename is not supported', () => {
  const before = snapshot({ webhooks: [webhook('ci', { uid: UID_A }), webhook('old', { secretName: 'ci-secret' })] });
  const state = applied(before);
  const onlyDelete = computePlan(snapshot(), state);
  assert.deepEqual(summary(onlyDelete.changes.filter((c) => c.action !== 'no-op')), ['delete webhook old']);
  assert.deepEqual(onlyDelete.ops.webhookDeletes, [state.webhooks[1].uid]);
  assert.deepEqual(onlyDelete.notes, []);
  const renamed = snapshot({ webhooks: [webhook('ci', { uid: UID_A }), webhook('new', { secretName: 'ci-secret' })] });
  const plan = computePlan(renamed, state);
  assert.deepEqual(summary(plan.changes.filter((c) => c.action !== 'no-op')), ['create webhook new', 'delete webhook old']);
  assert.match(plan.notes[0], /^rename is not supported: 'old' .* 'new' is created with a new UID/);
});

test('automations and environments: update diffs and deletes', () => {
  const before = snapshot({ environments: [environment('sandbox'), environment('spare')] });
  const after = snapshot({ automations: [automation('triage', UID_A, { prompt: 'New prompt.\n', enabled: false })] });
  const plan = computePlan(after, applied(before));
  const changed = plan.changes.filter((c) => c.action !== 'no-op');
  assert.deepEqual(summary(changed), ['delete environment spare', 'update automation triage']);
  assert.deepEqual(changed[1].diff!.map((d) => d.field), ['enabled', 'prompt']);
  assert.deepEqual(plan.ops.environmentDeletes, ['spare']);
});

test('a trigger selecting a UID that is no webhook of this factory is a warning note', () => {
  const s = snapshot({ automations: [automation('triage', UID_B)] });
  const plan = computePlan(s, emptyInput());
  assert.equal(plan.notes.length, 1);
  assert.match(plan.notes[0], /^warning: automations\/triage\.md: trigger 1 selects wh_b+, which is no webhook/);
});

test('baseRevision changes when the state or a secret version changes, not otherwise', () => {
  const s = snapshot();
  const state = applied(s);
  const r1 = baseRevision(state);
  assert.equal(baseRevision(applied(s)), r1);
  assert.match(r1, /^1-[0-9a-f]{16}$/);
  state.secrets.set('ci-secret', { version: 2 });
  assert.notEqual(baseRevision(state), r1);
});
