import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FactoryError } from '../../../core/errors.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { computePlan } from '../../../runtime/definitions/plan.ts';
import type { PlanInput } from '../../../runtime/definitions/state.ts';
import type { Store } from '../../../runtime/store/index.ts';
import { forEachEngine, type TestDatabase } from '../../helpers/postgres.ts';
import type { Snapshot } from '../../../core/snapshot.ts';
import { automation, environment, snapshot, webhook, UID_A, UID_B } from '../definitions/fixture.ts';

function withStore(db: TestDatabase, fn: (store: Store, clock: FakeClock) => void): void {
  const clock = new FakeClock();
  fn(db.open({ clock }), clock);
}

/** What the route gathers, minus secrets and cross-factory facts (these tests bypass the checks). */
function state(store: Store, s: Snapshot): PlanInput {
  const name = s.factory.name;
  return {
    factory: store.defs.getFactory(name),
    webhooks: store.defs.listWebhooks(name),
    automations: store.defs.listAutomations(name),
    environments: store.defs.listEnvironments(name),
    secrets: new Map(s.webhooks.map((w) => [w.secretName, { version: 1 }])),
    environmentOwners: new Map(),
    pinnedUidHolders: new Map(),
  };
}

function apply(store: Store, s: Snapshot, revision: string | null = null) {
  const plan = computePlan(s, state(store, s));
  return store.defs.applySnapshot(plan.ops, { revision, digest: s.digest });
}

forEachEngine('applySnapshot writes every resource and reads back the same definitions', (_t, db) => {
  withStore(db, (store) => {
    const s = snapshot({ webhooks: [webhook('ci', { uid: UID_A }), webhook('gh', { secretName: 'ci-secret' })] });
    const { created } = apply(store, s, 'abc123');
    assert.equal(created.get('ci'), UID_A);
    assert.match(created.get('gh')!, /^wh_[a-z2-7]{26}$/);
    const f = store.defs.getFactory('demo')!;
    assert.deepEqual([f.managedBy, f.revision, f.generation, f.digest], ['definitions', 'abc123', 1, s.digest]);
    assert.deepEqual(store.defs.listWebhooks('demo').map((w) => [w.name, w.enabled, w.secretVersion, w.sourceFile]), [
      ['ci', true, 1, 'webhooks/ci.yaml'],
      ['gh', true, 1, 'webhooks/gh.yaml'],
    ]);
    assert.deepEqual(store.defs.getEnvironment('sandbox'), s.environments[0]);
    assert.deepEqual(store.defs.listAutomations('demo').map((a) => [a.name, a.triggers]), [['triage', s.automations[0].triggers]]);
    // The same snapshot again plans nothing.
    assert.equal(computePlan(s, state(store, s)).changed, false);
  });
});

forEachEngine('a deleted webhook keeps its row and its UID can never be taken again', (_t, db) => {
  withStore(db, (store) => {
    apply(store, snapshot());
    apply(store, snapshot({ webhooks: [], automations: [] }));
    assert.deepEqual(store.defs.listWebhooks('demo'), []);
    const gone = store.defs.getWebhookByUid(UID_A)!;
    assert.ok(gone.deletedAt);
    assert.equal(gone.enabled, false);
    assert.equal(store.defs.listWebhooks('demo', { includeDeleted: true }).length, 1);
    assert.throws(
      () => store.defs.insertWebhook({ factory: 'demo', name: 'ci', authMode: 'token', secretName: 's', secretVersion: 1, enabled: true, managedBy: 'definitions', uid: UID_A }),
      (err: unknown) => err instanceof FactoryError && err.code === 'conflict',
    );
    // The name is free again for a new webhook with a new UID.
    const again = store.defs.insertWebhook({ factory: 'demo', name: 'ci', authMode: 'token', secretName: 's', secretVersion: 1, enabled: true, managedBy: 'definitions', uid: UID_B });
    assert.equal(again.uid, UID_B);
  });
});

forEachEngine('a write that fails midway leaves nothing behind (one transaction)', (_t, db) => {
  withStore(db, (store) => {
    apply(store, snapshot({ factory: { name: 'other', source: { file: 'factory.yaml' } }, webhooks: [], automations: [] }));
    // Bypass the checks: 'demo' also defines 'sandbox', which 'other' owns. The store refuses
    // after it has already inserted the factory, so everything must roll back.
    const s = snapshot({ environments: [environment('aaa'), environment('sandbox')] });
    assert.throws(() => apply(store, s), (err: unknown) => err instanceof FactoryError && err.code === 'conflict');
    assert.equal(store.defs.getFactory('demo'), undefined);
    assert.equal(store.defs.getWebhookByUid(UID_A), undefined);
    assert.equal(store.defs.getEnvironment('aaa'), undefined);
    assert.equal(store.defs.getEnvironmentRecord('sandbox')!.factory, 'other');
  });
});

forEachEngine('webhook lifecycle primitives: update the runtime fields, delete', (_t, db) => {
  withStore(db, (store, clock) => {
    apply(store, snapshot());
    clock.advance(1000);
    const w = store.defs.updateWebhook(UID_A, { enabled: false, secretVersion: 3 });
    assert.deepEqual([w.enabled, w.secretVersion, w.updatedAt], [false, 3, '2026-01-01T00:00:01.000Z']);
    store.defs.deleteWebhook(UID_A);
    assert.throws(() => store.defs.updateWebhook(UID_A, { enabled: true }), (err: unknown) => err instanceof FactoryError && err.code === 'resource_not_found');
  });
});

forEachEngine('createFactory fixes who manages a factory; a second create is a conflict', (_t, db) => {
  withStore(db, (store) => {
    assert.equal(store.defs.createFactory('ops', 'api').managedBy, 'api');
    assert.throws(() => store.defs.createFactory('ops', 'definitions'), (err: unknown) => err instanceof FactoryError && err.code === 'conflict');
  });
});

forEachEngine('the cached reads the ingress uses follow every write, and a rolled-back write leaves nothing stale', async (_t, db) => {
  const store = db.open({ clock: new FakeClock() });
  {
    const served = () => store.defs.servedWebhook(UID_A);
    const automations = () => store.defs.cachedAutomations('demo').map((a) => [a.name, a.enabled]);
    apply(store, snapshot());
    assert.equal(served()?.name, 'ci');
    assert.deepEqual(automations(), [['triage', true]]);
    assert.ok(Object.isFrozen(served()) && Object.isFrozen(store.defs.cachedAutomations('demo')[0].triggers[0]));

    const before = store.defs.generation();
    store.defs.updateWebhook(UID_A, { enabled: false });
    assert.notEqual(store.defs.generation(), before);
    assert.equal(served(), undefined);
    store.defs.updateWebhook(UID_A, { enabled: true, secretVersion: 2 });
    assert.equal(served()?.secretVersion, 2);

    apply(store, snapshot({ automations: [automation('triage', UID_A, { enabled: false }), automation('review', UID_A)] }));
    assert.deepEqual(automations(), [['review', true], ['triage', false]]);

    // Read inside the transaction that disables it, then rolled back: the cache filled inside it
    // must not outlive it.
    assert.throws(() =>
      store.transaction(() => {
        store.defs.updateWebhook(UID_A, { enabled: false });
        assert.equal(served(), undefined);
        throw new Error('undo');
      }),
    );
    await Promise.resolve();
    assert.equal(served()?.enabled, true, 'the rolled-back disable is not served');

    const other = store.defs.insertWebhook({ factory: 'demo', name: 'api', authMode: 'token', secretName: 's', secretVersion: 1, enabled: true, managedBy: 'api', uid: UID_B });
    assert.equal(store.defs.servedWebhook(other.uid)?.name, 'api');
    store.defs.deleteWebhook(UID_B);
    assert.equal(store.defs.servedWebhook(UID_B), undefined);

    apply(store, snapshot({ webhooks: [], automations: [] }));
    assert.equal(served(), undefined);
    assert.deepEqual(automations(), []);
  }
});

test('no module but store/definitions.ts writes the tables the generation covers', () => {
  // The ingress's caches trust store.defs.generation() (docs/ingress.md#constant-cost-per-delivery):
  // a write anywhere else would leave them stale.
  const root = join(import.meta.dirname, '../../../runtime');
  const writes = /\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+(factories|webhooks|automations|environments)\b/i;
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|sql)$/.test(entry.name) && !path.endsWith(join('store', 'definitions.ts')) && !path.includes(join('store', 'migrations'))) {
        if (writes.test(readFileSync(path, 'utf8'))) offenders.push(path);
      }
    }
  };
  walk(root);
  assert.deepEqual(offenders, []);
});
