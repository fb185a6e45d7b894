import { it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime, type CreatedHook } from '../ingress/helpers.ts';

/**
 * Rate limits (docs/ingress.md#rate-limits) are per sender address. Behind a trusted proxy that
 * address is the rightmost X-Forwarded-For entry, the one the proxy appended: everything to its
 * left came from the client, so a sender cannot buy a fresh budget by sending its own
 * X-Forwarded-For.
 */

let rt: TestRuntime;
let hook: CreatedHook;
const clock = new FakeClock('2026-03-01T12:00:00.000Z');

before(async () => {
  rt = await startIngressRuntime({ clock, trustProxy: true, limits: { deliveriesPerMinute: 1 } });
  hook = await createHook(rt, 'senders', { name: 'hook' });
});
after(() => rt.stop());

const send = (xff: string, body: string) => deliver(hook.url, body, { 'X-Forwarded-For': xff, Authorization: `Bearer ${hook.secret}` });

it('spoofed leftmost entries with the same rightmost hop share one budget', async () => {
  assert.equal((await send('198.51.100.1, 203.0.113.9', '{"n":1}')).status, 202);
  const spoofed = await send('198.51.100.2, 203.0.113.9', '{"n":2}');
  assert.equal(spoofed.status, 429, 'a new leftmost value is not a new sender');
  assert.equal((await send(' 203.0.113.9 ', '{"n":3}')).status, 429, 'whitespace is trimmed');
  // Another client behind the same proxy has its own budget.
  assert.equal((await send('198.51.100.1, 203.0.113.10', '{"n":4}')).status, 202);
  const senders = (await logOf(rt, hook.uid)).map((d) => d.sender);
  assert.deepEqual(senders, ['203.0.113.10', '203.0.113.9']);
});

it('an empty or invalid X-Forwarded-For falls back to the socket address', async () => {
  clock.advance(120_000);
  assert.equal((await send('', '{"n":5}')).status, 202);
  assert.equal((await send('1.2.3.4, not-an-address', '{"n":6}')).status, 429, 'same socket, same budget');
  const [latest] = await logOf(rt, hook.uid, 1);
  assert.match(String(latest.sender), /^(::ffff:)?127\.0\.0\.1$|^::1$/);
});
