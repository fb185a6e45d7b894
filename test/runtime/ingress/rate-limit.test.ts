import { it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { RateLimiter } from '../../../runtime/ingress/rate-limit.ts';

it('counts deliveries per webhook and sender in a fixed 60-second window', () => {
  const clock = new FakeClock();
  const rl = new RateLimiter(clock, { deliveriesPerMinute: 3, failedAuthPerMinute: 2 });
  for (let i = 0; i < 3; i++) assert.deepEqual(rl.take('wh_a', '1.1.1.1'), { ok: true });
  clock.advance(59_001);
  assert.deepEqual(rl.take('wh_a', '1.1.1.1'), { ok: false, retryAfterSeconds: 1, budget: 'deliveries' });
  assert.deepEqual(rl.take('wh_b', '1.1.1.1'), { ok: true });
  assert.deepEqual(rl.take('wh_a', '2.2.2.2'), { ok: true });
  clock.advance(999);
  assert.deepEqual(rl.take('wh_a', '1.1.1.1'), { ok: true });
});

it('refuses everything once the failed-auth budget is spent, and sweeps old windows', () => {
  const clock = new FakeClock();
  const rl = new RateLimiter(clock, { deliveriesPerMinute: 100, failedAuthPerMinute: 2 });
  rl.take('wh_a', 's');
  rl.failedAuth('wh_a', 's');
  assert.equal(rl.take('wh_a', 's').ok, true);
  rl.failedAuth('wh_a', 's');
  assert.deepEqual(rl.take('wh_a', 's'), { ok: false, retryAfterSeconds: 60, budget: 'failed_auth' });
  clock.advance(61_000);
  assert.equal(rl.take('wh_a', 's').ok, true);
  clock.advance(61_000);
  rl.take('wh_b', 's');
  assert.equal(rl.size, 1);
});
