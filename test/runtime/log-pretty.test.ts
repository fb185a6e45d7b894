import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, logRequest } from '../../runtime/log.ts';
import { prettyDestination, prettyLine } from '../../runtime/log-pretty.ts';

/** The activity feed of `factory dev`: the real logger's lines, turned into short human lines. */

function feed(): { log: ReturnType<typeof createLogger>; out: string[] } {
  const out: string[] = [];
  return { log: createLogger({ level: 'info', destination: prettyDestination((text) => out.push(text)) }), out };
}

const TIME = /^\d\d:\d\d:\d\d {2}/;

test('deliveries show their outcome and id (a rejection with its reason), with the URL token already redacted', () => {
  const { log, out } = feed();
  logRequest(log, { method: 'POST', url: '/webhooks/w/wh_abcdefghijklmnopqrstuvwxyz/s3cr3t-token', status: 202, ms: 3.4, delivery: { outcome: 'accepted', deliveryId: 'evt-1' } });
  logRequest(log, { method: 'POST', url: '/webhooks/w/wh_abcdefghijklmnopqrstuvwxyz', status: 401, ms: 1, delivery: { outcome: 'rejected_auth', deliveryId: 'evt-2' } });
  logRequest(log, { method: 'POST', url: '/webhooks/w/wh_abcdefghijklmnopqrstuvwxyz', status: 401, ms: 2, delivery: { outcome: 'rejected_auth', deliveryId: 'evt-3', reason: 'signature_mismatch' } });
  assert.equal(out[2].replace(TIME, ''), 'delivery evt-3 to /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz: 401 Rejected (auth): signature_mismatch (2 ms)\n');
  out.pop();
  assert.equal(out.length, 2);
  assert.match(out[0], TIME);
  assert.equal(out[0].replace(TIME, ''), 'delivery evt-1 to /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz/[REDACTED]: 202 Accepted (3 ms)\n');
  assert.equal(out[1].replace(TIME, ''), 'delivery evt-2 to /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz: 401 Rejected (auth) (1 ms)\n');
  assert.ok(!out.join('').includes('s3cr3t'));
});

test('changes and failed requests are shown; successful reads are left out', () => {
  const { log, out } = feed();
  logRequest(log, { method: 'GET', url: '/api/v1/webhooks', status: 200, ms: 1 });
  logRequest(log, { method: 'GET', url: '/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz', status: 404, ms: 1 });
  logRequest(log, { method: 'POST', url: '/api/v1/factories/example/apply?x=1', status: 200, ms: 7 });
  // A plan and a Test filter change nothing: left out like reads, unless they fail.
  logRequest(log, { method: 'POST', url: '/api/v1/factories/example/plan', status: 200, ms: 3 });
  logRequest(log, { method: 'POST', url: '/api/v1/automations/example/triage/test', status: 200, ms: 2 });
  logRequest(log, { method: 'POST', url: '/api/v1/factories/example/plan', status: 400, ms: 3 });
  assert.deepEqual(out.map((l) => l.replace(TIME, '')), [
    'GET /api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz → 404 (1 ms)\n',
    'POST /api/v1/factories/example/apply → 200 (7 ms)\n',
    'POST /api/v1/factories/example/plan → 400 (3 ms)\n',
  ]);
});

test('runs as they start and end; warnings and errors with their cause; redacted fields stay redacted', () => {
  const { log, out } = feed();
  log.info({ runId: 'run_a', environment: 'sandbox', creator: 'automation triage' }, 'run started');
  log.info({ runId: 'run_a', state: 'FAILED', statusMessage: 'the agent exited with code 1' }, 'run finished');
  log.warn({ err: new Error('disk full') }, 'workspace clean-up failed');
  log.error({ secret: 'hunter2-value' }, 'something broke');
  log.info({ url: 'http://x', dataDir: '/d' }, 'factory runtime listening');
  assert.deepEqual(out.map((l) => l.replace(TIME, '')), [
    'run run_a started (automation triage, environment sandbox)\n',
    'run run_a FAILED: the agent exited with code 1\n',
    'warning: workspace clean-up failed: disk full\n',
    'error: something broke\n',
  ]);
  assert.ok(!out.join('').includes('hunter2'));
});

test('a sender-chosen id with control characters stays on one line; a line that is not JSON passes through', () => {
  const line = JSON.stringify({ level: 30, time: '2026-11-23T10:00:00.000Z', msg: 'request', method: 'POST', path: '/webhooks/w/wh_abcdefghijklmnopqrstuvwxyz', status: 202, ms: 1, outcome: 'duplicate', delivery_id: 'a\u001b[31mred\nb' });
  assert.equal(prettyLine(line), '10:00:00  delivery a\\u001b[31mred\\nb to /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz: 202 Duplicate (1 ms)');
  assert.equal(prettyLine('plain text\n'), 'plain text');
  // C1 controls (a lone U+009B is CSI to some terminals) are escaped the same way.
  const c1 = JSON.stringify({ level: 30, time: '2026-11-23T10:00:00.000Z', msg: 'request', method: 'POST', path: '/webhooks/w/wh_abcdefghijklmnopqrstuvwxyz', status: 202, ms: 1, outcome: 'accepted', delivery_id: 'c1\u009b2J\u009d0;PWNED\u009c-end' });
  assert.equal(prettyLine(c1), '10:00:00  delivery c1\\u009b2J\\u009d0;PWNED\\u009c-end to /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz: 202 Accepted (1 ms)');
});
