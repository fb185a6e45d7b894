import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { createHook, logOf, type CreatedHook } from '../ingress/helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * A sender that trickles its request (docs/errors.md `request_timeout`): the runtime answers 408 and
 * closes the connection, and logs it as the 408 it was. The runtime's limits are 20 s for the
 * headers and 60 s for the whole request; this one runs with shorter ones, checked more often.
 */

let rt: TestRuntime;
let hook: CreatedHook;
before(async () => {
  rt = await startTestRuntime({ requestTimeouts: { headersMs: 400, requestMs: 800, checkEveryMs: 50 } });
  hook = await createHook(rt, 'shop', { name: 'orders' });
});
after(() => rt.stop());

/** Writes `text` and then nothing more; resolves with all the server sent once it closes the connection. */
function writeAndWait(text: string): Promise<string> {
  const url = new URL(hook.url);
  return new Promise((resolve, reject) => {
    const received: Buffer[] = [];
    const socket = connect(Number(url.port), url.hostname, () => socket.write(text));
    socket.on('data', (chunk) => received.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(received).toString('latin1')));
    socket.on('error', reject);
  });
}

test('a body that has not all arrived in time: 408, the connection closed, logged as body_timeout with a 408 access line', async () => {
  const url = new URL(hook.url);
  const head = [`POST ${url.pathname} HTTP/1.1`, `Host: ${url.host}`, `Authorization: Bearer ${hook.secret}`, 'Content-Length: 100', 'X-Service-Delivery-Id: slow-1'].join('\r\n');
  const answer = await writeAndWait(`${head}\r\n\r\n{"order":`);
  assert.match(answer, /^HTTP\/1\.1 408 Request timeout\r\n/);
  assert.match(answer, /\r\nConnection: close\r\n/);
  assert.match(answer, /"code":"request_timeout"/);
  const entry = (await eventually(async () => (await logOf(rt, hook.uid)).find((d) => d.delivery_id === 'slow-1'), 'the log entry'))!;
  assert.deepEqual([entry.outcome, entry.reason, entry.size], ['rejected_invalid_json', 'body_timeout', 9]);
  const access = await eventually(() => rt.logs.records().find((r) => r.msg === 'request' && String(r.path).startsWith('/webhooks/w/')), 'the access line');
  assert.equal(access!.status, 408, JSON.stringify(access));
});

test('headers that have not all arrived in time: 408 and the connection closed', async () => {
  const url = new URL(hook.url);
  const answer = await writeAndWait(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n`);
  assert.match(answer, /^HTTP\/1\.1 408 Request timeout\r\n/);
  assert.match(answer, /"code":"request_timeout"/);
});
