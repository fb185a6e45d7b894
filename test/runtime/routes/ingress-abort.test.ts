import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime, type CreatedHook } from '../ingress/helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * A sender that closes the connection before its body ends
 * (docs/ingress.md#the-pipeline-step-by-step: every request reaching an enabled webhook is logged):
 * Rejected (invalid JSON), reason body_incomplete, with the bytes that arrived as its size. Real
 * server, raw sockets.
 */

let rt: TestRuntime;
let hook: CreatedHook;
before(async () => {
  rt = await startIngressRuntime();
  hook = await createHook(rt, 'shop', { name: 'orders' });
});
after(() => rt.stop());

/** Writes a request head and part of a body, then closes the socket without waiting for an answer. */
function sendAndHangUp(headers: Record<string, string>, partial: string): Promise<void> {
  const url = new URL(hook.url);
  // Nothing else talks to the server meanwhile, so its next request is this one.
  const received = once(rt.server, 'request');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      const head = [`POST ${url.pathname} HTTP/1.1`, `Host: ${url.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
      socket.write(head + '\r\n\r\n' + partial, () => {
        // Hang up mid-body once the server has taken the head.
        received.then(() => socket.destroy(), reject);
      });
    });
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
}

async function waitForEntry(id: string): Promise<Record<string, any>> {
  return (await eventually(async () => (await logOf(rt, hook.uid)).find((d) => d.delivery_id === id), `a log entry for ${id}`))!;
}

test('a declared body cut short is logged Rejected (invalid JSON), body_incomplete, with the bytes that came', async () => {
  await sendAndHangUp({ Authorization: `Bearer ${hook.secret}`, 'Content-Length': '100', 'X-Service-Delivery-Id': 'cut-1' }, '{"order":');
  const entry = await waitForEntry('cut-1');
  assert.equal(entry.outcome, 'rejected_invalid_json');
  assert.equal(entry.outcome_label, 'Rejected (invalid JSON)');
  assert.equal(entry.reason, 'body_incomplete');
  assert.equal(entry.size, 9);
  assert.equal(entry.has_payload, false);
});

test('a chunked body cut short is logged the same way; no id header gives a generated id', async () => {
  const before = (await logOf(rt, hook.uid)).length;
  await sendAndHangUp({ Authorization: `Bearer ${hook.secret}`, 'Transfer-Encoding': 'chunked' }, '5\r\n{"a":\r\n');
  const log = await eventually(() => logOf(rt, hook.uid), 'a new log entry', { until: (l) => l.length !== before });
  assert.equal(log.length, before + 1);
  assert.equal(log[0].outcome, 'rejected_invalid_json');
  assert.equal(log[0].reason, 'body_incomplete');
  assert.equal(log[0].size, 5);
  assert.match(log[0].delivery_id, /^dlv_/);
});

test('a cut-short body does not claim its id: the same id sent whole is Accepted', async () => {
  await sendAndHangUp({ Authorization: `Bearer ${hook.secret}`, 'Content-Length': '50', 'X-Service-Delivery-Id': 'cut-2' }, '{"or');
  await waitForEntry('cut-2');
  const res = await deliver(hook.url, '{"order":2}', { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': 'cut-2' });
  assert.equal(res.status, 202);
  const entries = (await logOf(rt, hook.uid)).filter((d) => d.delivery_id === 'cut-2').map((d) => d.outcome);
  assert.deepEqual(entries, ['accepted', 'rejected_invalid_json']);
});

test('a wrong token is refused before the body, so hanging up then logs Rejected (auth) only', async () => {
  await sendAndHangUp({ Authorization: 'Bearer wrong', 'Content-Length': '100', 'X-Service-Delivery-Id': 'cut-3' }, '{"x"');
  const entry = await waitForEntry('cut-3');
  assert.equal(entry.outcome, 'rejected_auth');
  // A later request's entry is written after anything the hung-up one could still have logged.
  assert.equal((await deliver(hook.url, '{}', { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': 'after-3' })).status, 202);
  await waitForEntry('after-3');
  assert.equal((await logOf(rt, hook.uid)).filter((d) => d.delivery_id === 'cut-3').length, 1);
});
