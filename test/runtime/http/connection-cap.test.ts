import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { connectionCap, DEFAULT_MAX_CONNECTIONS } from '../../../runtime/http/connection-cap.ts';
import { METRICS_MAX_CONNECTIONS } from '../../../runtime/metrics.ts';
import { startTestRuntime } from '../helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/** The connection cap (docs/runtime.md#connections). */

const limits = (soft: string, hard = soft) => `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                ${hard}                files\n`;

test('connection cap: half the open-file limit, at most 10,000; a configured value wins', () => {
  assert.equal(connectionCap(undefined, limits('4096')), 2048);
  assert.equal(connectionCap(undefined, limits('1048576')), DEFAULT_MAX_CONNECTIONS);
  assert.equal(connectionCap(undefined, limits('unlimited')), DEFAULT_MAX_CONNECTIONS);
  assert.equal(connectionCap(undefined, limits('10')), 8, 'never below 8');
  assert.equal(connectionCap(undefined, undefined), DEFAULT_MAX_CONNECTIONS, 'no /proc');
  assert.equal(connectionCap(300, limits('4096')), 300);
});

/** Opens a connection and waits until it is connected. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** Resolves with what the server sent once it closed the connection (reset or not). */
function closed(s: Socket): Promise<string> {
  const got: Buffer[] = [];
  s.on('data', (c) => got.push(c));
  s.on('error', () => {});
  return new Promise((resolve) => s.on('close', () => resolve(Buffer.concat(got).toString('latin1'))));
}

test('connection cap: past --max-connections a new connection is closed unanswered, the log says so once and the metrics count each; once one ends, requests are answered again', async (t) => {
  const rt = await startTestRuntime({ flags: { maxConnections: 8, metricsPort: 0 } });
  t.after(() => rt.stop());
  const port = Number(new URL(rt.url).port);
  const held: Socket[] = [];
  t.after(() => held.forEach((s) => s.destroy()));
  for (let i = 0; i < 8; i++) held.push(await open(port));

  for (let i = 0; i < 3; i++) {
    const extra = await open(port);
    const answer = closed(extra);
    extra.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    assert.equal(await answer, '', 'closed before anything was answered');
  }
  // The cap's warning is the record with its fields (its wording is for people).
  const warnings = () => rt.logs.records().filter((r) => r.maxConnections !== undefined);
  await eventually(() => warnings().length === 1 || undefined, 'the warning');
  assert.equal(warnings().length, 1, 'one line for the three, not one each');
  assert.deepEqual([warnings()[0].maxConnections, warnings()[0].closed], [8, 1]);

  const metrics = await (await fetch(`http://127.0.0.1:${rt.services.metrics!.port}/metrics`)).text();
  assert.match(metrics, /^factory_http_connections_refused_total 3$/m);
  assert.match(metrics, /^factory_http_max_connections 8$/m);

  held.pop()!.destroy();
  const res = await eventually(async () => {
    try {
      return await fetch(`${rt.url}/healthz`);
    } catch {
      return undefined; // the server has not seen the close yet
    }
  }, 'an answer once a connection ended');
  assert.equal(res!.status, 200);
});

test('the metrics port holds at most 16 connections and says so naming that port; the API port goes on answering', async (t) => {
  const rt = await startTestRuntime({ flags: { metricsPort: 0 } });
  t.after(() => rt.stop());
  const port = rt.services.metrics!.port!;
  const held: Socket[] = [];
  t.after(() => held.forEach((s) => s.destroy()));
  for (let i = 0; i < METRICS_MAX_CONNECTIONS; i++) held.push(await open(port));
  const extra = await open(port);
  const answer = closed(extra);
  extra.write(`GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.equal(await answer, '', 'closed before anything was answered');
  const warning = await eventually(() => rt.logs.records().find((r) => r.listener === 'the metrics port'), 'the warning');
  assert.deepEqual([warning!.maxConnections, warning!.closed], [METRICS_MAX_CONNECTIONS, 1]);
  assert.equal((await fetch(`${rt.url}/healthz`)).status, 200);
  // The API port's own count is not touched by the metrics port's.
  assert.equal(rt.services.connections!.refused, 0);

  held.pop()!.destroy();
  const res = await eventually(async () => {
    try {
      return await fetch(`http://127.0.0.1:${port}/metrics`);
    } catch {
      return undefined; // the server has not seen the close yet
    }
  }, 'an answer once a connection ended');
  assert.equal(res!.status, 200);
});
