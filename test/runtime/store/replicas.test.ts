import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { testDatabase } from '../../helpers/postgres.ts';
import { eventually } from '../../helpers/eventually.ts';
import { createIngressState } from '../../../runtime/ingress/state.ts';
import { parseConfig } from '../../../runtime/config.ts';

/**
 * Two stores on one PostgreSQL database stand for two replicas (docs/deploy.md#several-replicas):
 * a change one of them writes reaches the other's caches through LISTEN/NOTIFY, with no restart and
 * no request to the writer.
 */

test('a webhook disabled, re-bound or deleted through one replica is served that way by the other', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const clock = new FakeClock();
  const a = db.open({ clock });
  const b = db.open({ clock });
  a.secrets.create('s', 'one');
  a.defs.createFactory('shop', 'api');
  const hook = a.defs.insertWebhook({ factory: 'shop', name: 'gh', authMode: 'token', secretName: 's', secretVersion: 1, enabled: true, managedBy: 'api' });

  // B caches the webhook as served.
  assert.equal(b.defs.servedWebhook(hook.uid)?.enabled, true);
  const before = b.defs.generation();

  a.defs.updateWebhook(hook.uid, { enabled: false });
  await eventually(() => b.defs.servedWebhook(hook.uid) === undefined, 'B to stop serving the disabled webhook');
  assert.ok(b.defs.generation() > before);

  a.defs.updateWebhook(hook.uid, { enabled: true });
  await eventually(() => b.defs.servedWebhook(hook.uid)?.enabled === true, 'B to serve it again');
  a.secrets.update('s', 'two');
  a.defs.updateWebhook(hook.uid, { secretVersion: 2 });
  await eventually(() => b.defs.servedWebhook(hook.uid)?.secretVersion === 2, 'B to see the new binding');

  a.defs.deleteWebhook(hook.uid);
  await eventually(() => b.defs.servedWebhook(hook.uid) === undefined, 'B to forget the deleted webhook');
});

test('a secret deleted and re-created through one replica is not answered from the other one\'s cache', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const clock = new FakeClock();
  const a = db.open({ clock });
  const b = db.open({ clock });
  const config = parseConfig({}, {}, '/tmp');
  const ingressB = createIngressState(config, b, clock);
  a.secrets.create('tok', 'first');
  assert.equal(ingressB.secrets.get('tok', 1), 'first');
  a.secrets.delete('tok');
  a.secrets.create('tok', 'second');
  // The same name and version, another value: only the announcement can tell B.
  await eventually(() => ingressB.secrets.get('tok', 1), 'B to read the re-created value', { until: (v) => v === 'second' });
});

test('a due run notification is taken by one replica: the other skips it until the hold ends', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const clock = new FakeClock();
  const a = db.open({ clock });
  const b = db.open({ clock });
  const run = a.runs.create({ prompt: 'x', environmentId: 'e', source: 'API', creator: { type: 'user', name: 'k' }, notify: { url: 'https://example.test/hook' } });
  a.runs.finish(run.run_id, 'CANCELLED', { statusMessage: 'cancelled before it started' });
  const takenByA = a.runs.dueNotifications(clock.now(), 10, 30_000);
  assert.deepEqual(takenByA.map((n) => n.runId), [run.run_id]);
  assert.deepEqual(b.runs.dueNotifications(clock.now(), 10, 30_000), [], 'held by A');
  clock.advance(30_000);
  // A replica that died mid-attempt leaves it due again once the hold has passed: at least once.
  assert.deepEqual(b.runs.dueNotifications(clock.now(), 10, 30_000).map((n) => n.runId), [run.run_id]);
});
