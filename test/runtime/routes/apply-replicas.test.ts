import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compile } from '../../../cli/compiler/compile.ts';
import { anotherReplicaHolding, postgresUrl } from '../../helpers/postgres.ts';
import { DEFINITIONS_LOCK } from '../../../runtime/store/definitions.ts';
import { startTestRuntime } from '../helpers.ts';

/**
 * Applies on several replicas of one PostgreSQL database (docs/plan-apply.md#concurrent-applies):
 * another replica's apply, held open in a child process under the definitions lock, commits a
 * change while this runtime's apply against the same base revision waits for the lock; this one
 * must then see the change and refuse as stale, never write over it.
 */
test('an apply waits for another replica\'s apply and, made against the same base, is refused as stale', async (t) => {
  const url = await postgresUrl(t);
  if (!url) return;
  const rt = await startTestRuntime({ postgres: url });
  t.after(() => rt.stop());
  const snapshotOf = (description: string) => {
    const { snapshot, diagnostics } = compile([{ path: 'factory.yaml', text: `name: shop\ndescription: ${description}\n` }]);
    assert.ok(snapshot, JSON.stringify(diagnostics));
    return snapshot;
  };
  assert.equal((await rt.fetch('/api/v1/factories/shop/apply', { method: 'POST', json: { snapshot: snapshotOf('first') } })).status, 200);
  const planned = (await (await rt.fetch('/api/v1/factories/shop/plan', { method: 'POST', json: { snapshot: snapshotOf('mine') } })).json()) as { base_revision: string };

  // The other replica: takes the lock, changes the factory, commits a moment later.
  const other = await anotherReplicaHolding(url, DEFINITIONS_LOCK, { inTurn: ["UPDATE factories SET description = 'theirs' WHERE name = 'shop'"] });
  const res = await rt.fetch('/api/v1/factories/shop/apply', { method: 'POST', json: { snapshot: snapshotOf('mine'), base_revision: planned.base_revision } });
  await other.ended;
  const body = (await res.json()) as { code: string; errors?: { code: string }[] };
  assert.equal(res.status, 409, JSON.stringify(body));
  assert.equal(body.errors?.[0].code, 'plan.stale');
  const shop = (await (await rt.fetch('/api/v1/factories/shop/plan', { method: 'POST', json: { snapshot: snapshotOf('theirs') } })).json()) as { changed: boolean };
  assert.equal(shop.changed, false, "the other replica's change stands");
});
