import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FakeClock } from '../../../runtime/clock.ts';
import { RateLimiter, SharedRateLimiter, type Limiter, type RateLimits } from '../../../runtime/ingress/rate-limit.ts';
import { openStore, type Store } from '../../../runtime/store/index.ts';
import { testDatabase } from '../../helpers/postgres.ts';

/**
 * The shared limiter keeps the in-memory limiter's rules (docs/ingress.md#rate-limits) while two
 * limiters on two connections to one database count together (docs/deploy.md#several-replicas).
 * Two Store objects on one SQLite file are two connections, like two replicas on one server.
 */
function sharedPair(t: { after: (fn: () => void) => void }, clock: FakeClock, limits: RateLimits): [Limiter, Limiter, Store] {
  const dir = mkdtempSync(join(tmpdir(), 'factory-rate-'));
  const masterKey = randomBytes(32);
  const a = openStore({ path: join(dir, 'factory.db'), clock, masterKey });
  const b = openStore({ path: join(dir, 'factory.db'), clock, masterKey });
  t.after(() => {
    a.close();
    b.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return [new SharedRateLimiter(clock, limits, a.rateWindows), new SharedRateLimiter(clock, limits, b.rateWindows), a];
}

const kinds: [string, (t: { after: (fn: () => void) => void }, clock: FakeClock, limits: RateLimits) => Limiter][] = [
  ['in memory', (_t, clock, limits) => new RateLimiter(clock, limits)],
  ['shared', (t, clock, limits) => sharedPair(t, clock, limits)[0]],
];

for (const [kind, make] of kinds) {
  describe(`rate limits (${kind})`, () => {
    it('counts deliveries per webhook and sender in a fixed 60-second window', (t) => {
      const clock = new FakeClock();
      const rl = make(t, clock, { deliveriesPerMinute: 3, failedAuthPerMinute: 2 });
      for (let i = 0; i < 3; i++) assert.deepEqual(rl.take('wh_a', '1.1.1.1'), { ok: true });
      clock.advance(59_001);
      assert.deepEqual(rl.take('wh_a', '1.1.1.1'), { ok: false, retryAfterSeconds: 1, budget: 'deliveries' });
      assert.deepEqual(rl.take('wh_b', '1.1.1.1'), { ok: true });
      assert.deepEqual(rl.take('wh_a', '2.2.2.2'), { ok: true });
      clock.advance(999);
      assert.deepEqual(rl.take('wh_a', '1.1.1.1'), { ok: true });
    });

    it('refuses everything once the failed-auth budget is spent, until the window passes', (t) => {
      const clock = new FakeClock();
      const rl = make(t, clock, { deliveriesPerMinute: 100, failedAuthPerMinute: 2 });
      rl.take('wh_a', 's');
      rl.failedAuth('wh_a', 's');
      assert.equal(rl.take('wh_a', 's').ok, true);
      rl.failedAuth('wh_a', 's');
      assert.deepEqual(rl.take('wh_a', 's'), { ok: false, retryAfterSeconds: 60, budget: 'failed_auth' });
      clock.advance(61_000);
      assert.equal(rl.take('wh_a', 's').ok, true);
    });

    it('keeps the window when the clock moves back a little (replicas\' clocks differ), and starts a new one when it moves back more than a window', (t) => {
      const clock = new FakeClock();
      const rl = make(t, clock, { deliveriesPerMinute: 1, failedAuthPerMinute: 5 });
      assert.equal(rl.take('wh_a', 's').ok, true);
      assert.equal(rl.take('wh_a', 's').ok, false);
      clock.advance(-5_000);
      assert.deepEqual(rl.take('wh_a', 's'), { ok: false, retryAfterSeconds: 60, budget: 'deliveries' });
      clock.advance(-60_000);
      assert.equal(rl.take('wh_a', 's').ok, true);
    });
  });
}

describe('rate limits shared by two connections to one database', () => {
  it('hold the budget in total: 60 a minute across both, not 60 each', (t) => {
    const clock = new FakeClock();
    const [a, b] = sharedPair(t, clock, { deliveriesPerMinute: 60, failedAuthPerMinute: 20 });
    let granted = 0;
    for (let i = 0; i < 100; i++) if ((i % 2 ? a : b).take('wh_a', '9.9.9.9').ok) granted++;
    assert.equal(granted, 60);
    const refused = a.take('wh_a', '9.9.9.9');
    assert.equal(refused.ok, false);
    clock.advance(60_000);
    assert.equal(b.take('wh_a', '9.9.9.9').ok, true);
  });

  it('count failed authentications from either connection against one budget', (t) => {
    const clock = new FakeClock();
    const [a, b] = sharedPair(t, clock, { deliveriesPerMinute: 60, failedAuthPerMinute: 2 });
    a.failedAuth('wh_a', 's');
    assert.equal(b.take('wh_a', 's').ok, true);
    b.failedAuth('wh_a', 's');
    assert.deepEqual(a.take('wh_a', 's'), { ok: false, retryAfterSeconds: 60, budget: 'failed_auth' });
  });

  it('sweeps windows that ended a window ago', (t) => {
    const clock = new FakeClock();
    const [a, , store] = sharedPair(t, clock, { deliveriesPerMinute: 60, failedAuthPerMinute: 20 });
    a.take('wh_a', 'old');
    clock.advance(125_000);
    a.take('wh_a', 'new');
    assert.equal(store.rateWindows.sweep(clock.now().getTime() - 60_000, clock.now().getTime() + 60_000), 0, 'the take above swept the old window already');
    a.take('wh_b', 'x');
    clock.advance(-200_000);
    assert.equal(store.rateWindows.sweep(clock.now().getTime() - 60_000, clock.now().getTime() + 60_000), 2, 'windows in the future (a clock moved back) go too');
  });
});

describe('rate limits shared by replicas whose clocks differ a little', () => {
  it('count every request of both: a window started a moment "later" by the other is the same window', (t) => {
    const ahead = new FakeClock();
    const behind = new FakeClock(new Date(ahead.now().getTime() - 3));
    const dir = mkdtempSync(join(tmpdir(), 'factory-rate-skew-'));
    const masterKey = randomBytes(32);
    const stores = [openStore({ path: join(dir, 'factory.db'), clock: ahead, masterKey }), openStore({ path: join(dir, 'factory.db'), clock: behind, masterKey })];
    t.after(() => {
      for (const s of stores) s.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const limits = { deliveriesPerMinute: 60, failedAuthPerMinute: 20 };
    const a = new SharedRateLimiter(ahead, limits, stores[0].rateWindows);
    const b = new SharedRateLimiter(behind, limits, stores[1].rateWindows);
    let granted = 0;
    // The replica whose clock is ahead opens the window; the other's requests land "before" it.
    for (let i = 0; i < 150; i++) if ((i % 3 ? b : a).take('wh_a', '7.7.7.7').ok) granted++;
    assert.equal(granted, 60);
  });
});

describe('rate limits shared by two replicas on PostgreSQL', () => {
  it('hold the budget in total, and the failed-auth budget too', async (t) => {
    const db = await testDatabase(t, 'postgres');
    if (!db) return;
    const clock = new FakeClock();
    const limits = { deliveriesPerMinute: 60, failedAuthPerMinute: 3 };
    const [a, b] = [db.open({ clock }), db.open({ clock })].map((s) => new SharedRateLimiter(clock, limits, s.rateWindows));
    let granted = 0;
    for (let i = 0; i < 100; i++) if ((i % 2 ? a : b).take('wh_a', '9.9.9.9').ok) granted++;
    assert.equal(granted, 60);
    assert.deepEqual(a.take('wh_a', '9.9.9.9'), { ok: false, retryAfterSeconds: 60, budget: 'deliveries' });
    for (let i = 0; i < 3; i++) (i % 2 ? a : b).failedAuth('wh_b', 's');
    assert.deepEqual(b.take('wh_b', 's'), { ok: false, retryAfterSeconds: 60, budget: 'failed_auth' });
    clock.advance(60_000);
    assert.equal(b.take('wh_a', '9.9.9.9').ok, true);
    assert.equal(a.take('wh_b', 's').ok, true);
  });

  it('are counted in a table kept out of the WAL, so a request waits for no WAL flush of its own', async (t) => {
    const db = await testDatabase(t, 'postgres');
    if (!db) return;
    const store = db.open({ clock: new FakeClock() });
    // 'u': unlogged (migration 025). Its index follows the table; 'p' would be an ordinary table.
    const persistence = store.db
      .prepare(`SELECT relname, relpersistence FROM pg_class WHERE relname IN ('rate_windows', 'rate_windows_pkey', 'rate_windows_by_start') AND relnamespace = current_schema()::regnamespace ORDER BY relname`)
      .all();
    assert.deepEqual(persistence, [
      { relname: 'rate_windows', relpersistence: 'u' },
      { relname: 'rate_windows_by_start', relpersistence: 'u' },
      { relname: 'rate_windows_pkey', relpersistence: 'u' },
    ]);
  });
});

it('the in-memory limiter sweeps windows that have passed', () => {
  const clock = new FakeClock();
  const rl = new RateLimiter(clock, { deliveriesPerMinute: 100, failedAuthPerMinute: 2 });
  rl.take('wh_a', 's');
  clock.advance(61_000);
  rl.take('wh_b', 's');
  assert.equal(rl.size, 1);
});
