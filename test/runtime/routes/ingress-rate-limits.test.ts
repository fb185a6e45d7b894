import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime, type CreatedHook } from '../ingress/helpers.ts';

/** docs/ingress.md#rate-limits through the real server: senders are told apart with trustProxy + X-Forwarded-For. */

let rt: TestRuntime;
let hook: CreatedHook;
const clock = new FakeClock('2026-03-01T12:00:00.000Z');

before(async () => {
  rt = await startIngressRuntime({ clock, trustProxy: true });
  hook = await createHook(rt, 'rl', { name: 'hook' });
});
after(() => rt.stop());

// The trusted proxy appends the sender on the right; the left entry is the client's own claim.
const from = (ip: string, secret = hook.secret) => ({ 'X-Forwarded-For': `10.9.9.9, ${ip}`, Authorization: `Bearer ${secret}` });

describe('delivery budget', () => {
  it('answers the 61st delivery in a minute with 429 and Retry-After, leaving other senders alone', async () => {
    for (let i = 0; i < 60; i++) {
      assert.equal((await deliver(hook.url, JSON.stringify({ i }), from('203.0.113.1'))).status, 202, `delivery ${i + 1}`);
    }
    clock.advance(20_500);
    const limited = await deliver(hook.url, '{"i":60}', from('203.0.113.1'));
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '40');
    assert.equal(((await limited.json()) as { code: string }).code, 'rate_limited');
    assert.equal((await deliver(hook.url, '{"other":1}', from('203.0.113.2'))).status, 202);
    // 429s are not deliveries: the log holds 60 + 1 entries, none of them for the refused one.
    assert.equal((await logOf(rt, hook.uid)).length, 61);
    clock.advance(40_000);
    assert.equal((await deliver(hook.url, '{"i":61}', from('203.0.113.1'))).status, 202);
  });
});

describe('failed-authentication budget', () => {
  it('makes every request 429 once 20 authentications failed, even with the right secret, until the window passes', async () => {
    clock.advance(120_000);
    const ip = '198.51.100.7';
    for (let i = 0; i < 20; i++) assert.equal((await deliver(hook.url, '{}', from(ip, 'wrong'))).status, 401, `failure ${i + 1}`);
    const twentyFirst = await deliver(hook.url, '{}', from(ip, 'wrong'));
    assert.equal(twentyFirst.status, 429);
    const right = await deliver(hook.url, '{"right":1}', from(ip));
    assert.equal(right.status, 429);
    const retry = Number(right.headers.get('retry-after'));
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60);
    assert.equal((await deliver(hook.url, '{"right":2}', from('198.51.100.8'))).status, 202);
    clock.advance(retry * 1000);
    assert.equal((await deliver(hook.url, '{"right":3}', from(ip))).status, 202);
  });
});
