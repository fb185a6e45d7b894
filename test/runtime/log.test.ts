import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, logRequest, redactUrl, turnDestination } from '../../runtime/log.ts';
import { LogCapture } from './helpers.ts';

test('redactUrl hides the url_token segment and drops query strings', () => {
  const uid = 'wh_abcdefghijklmnopqrstuvwxyz';
  assert.equal(redactUrl(`/webhooks/w/${uid}/s3cr3t`), `/webhooks/w/${uid}/[REDACTED]`);
  assert.equal(redactUrl(`/webhooks/w/${uid}/s3cr3t/more?x=1`), `/webhooks/w/${uid}/[REDACTED]`);
  assert.equal(redactUrl(`/webhooks/w/${uid}`), `/webhooks/w/${uid}`);
  assert.equal(redactUrl(`/webhooks/w/${uid}?token=x`), `/webhooks/w/${uid}`);
  // Only a UID-shaped segment shows: anything else there may be a token sent without its UID.
  assert.equal(redactUrl('/webhooks/w/wh_abc/s3cr3t'), '/webhooks/w/[REDACTED]');
  assert.equal(redactUrl('/webhooks/w;/wh_abcdefghijklmnopqrstuvwxyz/s3cr3t'), '/webhooks/[REDACTED]');
  assert.equal(redactUrl('/api/v1/agent/runs?cursor=abc#f'), '/api/v1/agent/runs');
  // Every other shape: test/runtime/log-redact.test.ts.
});

test('secret-like fields and auth headers are redacted', () => {
  const cap = new LogCapture();
  const log = createLogger({ level: 'info', destination: cap });
  // Sentinels that cannot occur by chance in a log line (a bare 'T1' is in every ISO time from 10:00 to 19:59).
  const v = (name: string) => `leak-${name}-7f3a9c`;
  log.info(
    { secret: v('s1'), value: v('v1'), token: v('t1'), key: v('k1'), nested: { secret: v('s2') }, req: { headers: { authorization: `Bearer ${v('b1')}`, cookie: v('c1') } } },
    'x',
  );
  assert.ok(cap.text.length > 0);
  for (const leaked of ['s1', 'v1', 't1', 'k1', 's2', 'b1', 'c1'].map(v)) assert.ok(!cap.text.includes(leaked), leaked);
  assert.match(cap.text, /\[REDACTED\]/);
});

test('the default destination writes the lines of one event-loop turn together, at the end of the turn', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-log-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'out.log');
  const log = createLogger({ level: 'info', destination: turnDestination(file) });
  log.info('one');
  log.info('two');
  assert.equal(readFileSync(file, 'utf8'), '', 'nothing is written during the turn');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).msg), ['one', 'two']);
  log.info('three');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).msg), ['one', 'two', 'three']);
});

test('lines still pending when the process exits are written, on stdout by default', () => {
  // A real child: it logs, then exits in the same turn, and again with an uncaught error.
  const run = (tail: string) => {
    const script = `import { createLogger } from ${JSON.stringify(new URL('../../runtime/log.ts', import.meta.url).href)};
      const log = createLogger(); log.info('before exit'); log.warn({ n: 2 }, 'second'); ${tail}`;
    try {
      return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch (err) {
      return (err as { stdout: string }).stdout;
    }
  };
  for (const tail of ['process.exit(0);', 'throw new Error("boom");']) {
    const lines = run(tail).trimEnd().split('\n').map((l) => JSON.parse(l) as { msg: string });
    assert.deepEqual(lines.map((l) => l.msg), ['before exit', 'second'], tail);
  }
});

test('the access line written directly is byte for byte the line pino writes', () => {
  const direct = new LogCapture();
  const viaPino = new LogCapture();
  const own = createLogger({ level: 'info', destination: direct });
  // A child is not a root logger of createLogger's, so its access lines go through pino.
  const other = createLogger({ level: 'info', destination: viaPino }).child({});
  const uid = 'wh_abcdefghijklmnopqrstuvwxyz';
  const lines = [
    { method: 'POST', url: `/webhooks/w/${uid}/s3cr3t?x=1`, status: 202, ms: 1.5, delivery: { outcome: 'accepted', deliveryId: 'a"b\\c\u2028\u0001é😀' } },
    { method: 'POST', url: `/webhooks/w/${uid}`, status: 401, ms: 0.125, delivery: { outcome: 'rejected_auth', deliveryId: 'dlv_x', reason: 'bad_credentials' } },
    { method: 'POST', url: `/webhooks/w/${uid}`, status: 400, ms: 3, delivery: { outcome: 'rejected_invalid_json', deliveryId: 'y', reason: null } },
    { method: 'GET', url: '/healthz', status: 200, ms: 0 },
    { method: 'M\u0000"', url: '/nothing/here', status: 404, ms: Number.NaN },
  ];
  for (const line of lines) {
    logRequest(own, line);
    logRequest(other, line);
  }
  const withoutTime = (l: string) => l.replace(/"time":"[^"]+"/, '"time":"T"');
  assert.equal(direct.lines.length, lines.length);
  assert.deepEqual(direct.lines.map(withoutTime), viaPino.lines.map(withoutTime));
  // Above the info level nothing is written.
  const quiet = new LogCapture();
  logRequest(createLogger({ level: 'warn', destination: quiet }), lines[0]);
  assert.deepEqual(quiet.lines, []);
});
