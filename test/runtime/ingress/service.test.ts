import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../../runtime/clock.ts';
import type { IngressService } from '../../../runtime/ingress/service.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf } from './helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * docs/ingress.md#delivery-log "older entries are pruned in the background": the ingress service
 * prunes on its own (a pass right after start, in small steps, then on a timer), without anyone
 * calling pruneDeliveryLog. The retention rule itself is tested in
 * test/runtime/routes/webhooks-manage.test.ts and, step by step, in
 * test/runtime/store/deliveries.test.ts.
 */

/** Waits for the first background pass of a freshly started runtime to finish. */
const firstPass = (rt: TestRuntime) => eventually(() => (rt.services.ingress as IngressService).prunePasses > 0, 'the first pruning pass');

const DAY = 86_400_000;

it('a runtime started on an old log prunes it by itself: the newest 50 per webhook stay', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-prune-'));
  const clock = new FakeClock('2026-05-01T00:00:00.000Z');
  try {
    let rt = await startTestRuntime({ dataDir, clock, flags: { limits: { deliveriesPerMinute: 100_000 } } });
    const hook = await createHook(rt, 'retention', { name: 'old' });
    for (let i = 0; i < 60; i++) {
      const res = await deliver(hook.url, `{"i":${i}}`, { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': `d-${i}` });
      assert.equal(res.status, 202);
    }
    await rt.stop();

    // Still within 7 days: a restart keeps everything.
    clock.advance(6 * DAY);
    rt = await startTestRuntime({ dataDir, clock });
    await firstPass(rt);
    assert.equal((await logOf(rt, hook.uid)).length, 60);
    await rt.stop();

    // Past 7 days: the restart alone prunes down to the newest 50, after start-up, not during it.
    clock.advance(2 * DAY);
    rt = await startTestRuntime({ dataDir, clock });
    await firstPass(rt);
    const log = await logOf(rt, hook.uid);
    assert.deepEqual(log.map((e) => e.delivery_id), Array.from({ length: 50 }, (_, i) => `d-${59 - i}`));
    assert.ok(log.every((e) => e.has_payload));
    await rt.stop();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
