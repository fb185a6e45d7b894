import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { connect } from 'node:net';
import { eventually } from '../helpers/eventually.ts';
import { startTestRuntime } from './helpers.ts';

test('healthz, readyz, 404 and 405 problems; the admin key is bootstrapped once', async () => {
  const rt = await startTestRuntime();
  try {
    assert.match(rt.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(rt.port, 0);
    assert.equal(rt.config.baseUrl, rt.url);

    const h = await rt.fetch('/healthz', { key: null });
    assert.equal(h.status, 200);
    // The same bytes and type as the answer given while the runtime starts (answerWhileStarting).
    assert.equal(h.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(await h.text(), '{"status":"ok"}');
    const r = await rt.fetch('/readyz', { key: null });
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { status: 'ok', database: { engine: rt.store.engine, reachable: true } });

    const nf = await rt.fetch('/nothing/here?secret=abc', { key: null });
    assert.equal(nf.status, 404);
    assert.match(nf.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const p = (await nf.json()) as Record<string, unknown>;
    assert.equal(p.code, 'resource_not_found');
    assert.equal(p.type, 'https://factory.dev/problems/resource_not_found');
    assert.equal(p.status, 404);
    // A path that is no route is echoed only up to its first unknown segment (docs/runtime.md#logged-paths).
    assert.equal(p.instance, '/[REDACTED]');
    assert.equal(p.error, p.detail);
    assert.equal(p.retryable, false);

    const m = await rt.fetch('/healthz', { method: 'POST', key: null });
    assert.equal(m.status, 405);
    assert.match(m.headers.get('allow') ?? '', /GET/);
    assert.equal(((await m.json()) as { code: string }).code, 'method_not_allowed');

    // Admin key: file mode 0600, the key works, and the log names the path but never the key.
    assert.equal(rt.adminKeyCreated, true);
    assert.equal(statSync(rt.adminKeyPath).mode & 0o777, 0o600);
    assert.match(rt.adminKey, /^fk_[A-Za-z0-9_-]{43}$/);
    assert.ok(rt.logs.text.includes(rt.adminKeyPath));
    assert.ok(!rt.logs.text.includes(rt.adminKey));
    // On SQLite the runtime makes its own master key beside the database; a PostgreSQL deployment
    // is given one (FACTORY_MASTER_KEY, as FACTORY_TEST_ENGINE=postgres does), and none is written.
    if (rt.store.engine === 'sqlite') assert.equal(statSync(join(rt.dataDir, 'master.key')).mode & 0o777, 0o600);
    else assert.equal(existsSync(join(rt.dataDir, 'master.key')), false);
  } finally {
    await rt.close();
  }

  // Restart on the same data dir: no new admin key, the old one still works.
  const again = await startTestRuntime({ dataDir: rt.dataDir });
  try {
    assert.equal(again.adminKeyCreated, false);
    assert.equal(readFileSync(again.adminKeyPath, 'utf8').trim(), rt.adminKey);
    assert.equal(again.store.keys.count(), 1);
    const keys = await again.fetch('/api/v1/keys', { key: rt.adminKey });
    assert.equal(keys.status, 200);
  } finally {
    await again.close();
    rmSync(rt.dataDir, { recursive: true, force: true });
  }
});

test('access log: method, redacted path, status; readyz fails when the database is closed', async () => {
  const rt = await startTestRuntime();
  try {
    await rt.fetch('/webhooks/w/wh_aaaaaaaaaaaaaaaaaaaaaaaaaa/super-secret-token?x=leak', { key: null, method: 'POST', body: '{}' });
    assert.ok(!rt.logs.text.includes('super-secret-token'));
    assert.ok(!rt.logs.text.includes('leak'));
    const line = rt.logs.records().find((r) => r.msg === 'request' && String(r.path).startsWith('/webhooks/'));
    assert.equal(line?.path, '/webhooks/w/wh_aaaaaaaaaaaaaaaaaaaaaaaaaa/[REDACTED]');
    assert.equal(line?.method, 'POST');
    assert.equal(typeof line?.status, 'number');

    rt.store.db.close();
    const r = await rt.fetch('/readyz', { key: null });
    assert.equal(r.status, 503);
    const p = (await r.json()) as { code: string; retryable: boolean };
    assert.equal(p.code, 'service_unavailable');
    assert.equal(p.retryable, true);
  } finally {
    await rt.stop();
  }
});

test('close() waits for an in-flight request, then closes the database; it is idempotent', async () => {
  const rt = await startTestRuntime();
  const { request } = await import('node:http');
  const url = new URL(rt.url);
  // A request whose body is still being sent when close() starts.
  const req = request({
    hostname: url.hostname,
    port: url.port,
    path: '/api/v1/secrets',
    method: 'POST',
    headers: { Authorization: `Bearer ${rt.adminKey}`, 'Content-Type': 'application/json' },
  });
  const response = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  const received = once(rt.server, 'request');
  req.write('{"name": "late", ');
  await received;
  let closed = false;
  const closing = rt.stop().then(() => (closed = true));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(closed, false, 'close() waits for the request in flight');
  req.end('"value": "v"}');
  assert.equal(await response, 201);
  await closing;
  await rt.close();
  assert.equal(rt.store.ping(), false);
});

test('a port in use is one clear sentence, the metrics port\'s too, naming its own flag', async () => {
  const rt = await startTestRuntime();
  try {
    await assert.rejects(startTestRuntime({ flags: { port: rt.port } }), /127\.0\.0\.1:\d+ is already in use; stop the other process or pass --port\./);
    await assert.rejects(startTestRuntime({ flags: { metricsPort: rt.port } }), new RegExp(`^CliError: 127\\.0\\.0\\.1:${rt.port} is already in use; stop the other process or pass --metrics-port\\.$`));
  } finally {
    await rt.stop();
  }
});

test('a client that breaks its own request is logged in one line without a stack, and the runtime goes on', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  // A body shorter than its Content-Length, then the sender's half of the connection closed.
  const socket = connect(rt.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(`POST /api/v1/agent/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rt.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"prompt":`);
  socket.end();
  socket.resume();
  await once(socket, 'close');
  const line = (await eventually(() => rt.logs.records().find((l) => l.msg === 'client broke its request'), 'the line about the broken request'))!;
  assert.equal(line.level, 30);
  assert.match(String(line.code), /^HPE_/);
  assert.ok(!rt.logs.text.includes('"stack"'), rt.logs.text);
  assert.ok(!rt.logs.records().some((l) => l.msg === 'koa error'));
  assert.equal((await rt.fetch('/healthz', { key: null })).status, 200);
});

test('a data dir or work dir that is a file, or under one, is one clear sentence before anything starts', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-dirs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'a-file');
  writeFileSync(file, 'not a directory\n');
  await assert.rejects(startTestRuntime({ dataDir: file }), { message: `cannot use ${file} as the data dir: it is not a directory.` });
  await assert.rejects(startTestRuntime({ dataDir: join(file, 'data') }), { message: `cannot use ${join(file, 'data')} as the data dir: a part of the path is not a directory.` });
  await assert.rejects(startTestRuntime({ dataDir: join(dir, 'data'), flags: { workDir: file } }), { message: `cannot use ${file} as the work dir: it is not a directory.` });
});

test('a data dir and key files readable by others are tightened at start, with a warning; the database is 0600', async (t) => {
  // The data dir's own SQLite file, whatever FACTORY_TEST_ENGINE says.
  const first = await startTestRuntime({ keepDataDir: true, sqlite: true });
  const dataDir = first.dataDir;
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  await first.stop();
  const mode = (p: string) => statSync(p).mode & 0o777;
  assert.equal(mode(join(dataDir, 'factory.db')), 0o600, 'the database is made 0600');
  // As `mkdir -p` with a loose umask, or a copy, would leave them.
  chmodSync(dataDir, 0o755);
  for (const f of ['admin.key', 'factory.db']) chmodSync(join(dataDir, f), 0o644);
  const rt = await startTestRuntime({ dataDir, keepDataDir: true, sqlite: true });
  t.after(() => rt.stop());
  assert.equal(mode(dataDir), 0o700);
  assert.equal(mode(join(dataDir, 'admin.key')), 0o600);
  assert.equal(mode(join(dataDir, 'factory.db')), 0o600);
  const warned = rt.logs.records().filter((r) => r.msg === 'this data dir path was readable by other users; its mode was tightened').map((r) => [r.path, r.was]);
  assert.deepEqual(warned, [[dataDir, '755'], [join(dataDir, 'admin.key'), '644']]);
});

test('a master.key gone from beside its database is one clear sentence, and no new key is made', async (t) => {
  // The data dir's own SQLite file (PostgreSQL takes its key from FACTORY_MASTER_KEY, never from the data dir).
  const first = await startTestRuntime({ keepDataDir: true, sqlite: true });
  const dataDir = first.dataDir;
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  await first.stop();
  rmSync(join(dataDir, 'master.key'));
  await assert.rejects(startTestRuntime({ dataDir, keepDataDir: true, sqlite: true }), {
    message: `there is no master.key beside the existing database in ${dataDir}; restore master.key from a backup, or set FACTORY_MASTER_KEY to the key the database was made with.`,
  });
  assert.equal(existsSync(join(dataDir, 'master.key')), false);
});

test('a request trickled in is cut short: headers within 20 s, the whole request within 60 s (docs/errors.md)', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  assert.equal(rt.server.headersTimeout, 20_000);
  assert.equal(rt.server.requestTimeout, 60_000);
});

test('while the runtime starts, /healthz answers 200 and /readyz a 503 at once; other requests wait for it', async (t) => {
  const { createServer } = await import('node:http');
  const { answerWhileStarting } = await import('../../runtime/server.ts');
  const { listenLocally } = await import('../helpers/listen.ts');
  const waited: string[] = [];
  const server = createServer((req, res) => {
    if (!answerWhileStarting(req, res)) {
      waited.push(req.url ?? '');
      res.writeHead(204).end();
    }
  });
  const url = await listenLocally(server);
  t.after(() => server.close());
  const health = await fetch(`${url}/healthz`);
  assert.deepEqual([health.status, await health.json()], [200, { status: 'ok' }]);
  const ready = await fetch(`${url}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal(((await ready.json()) as { code: string }).code, 'service_unavailable');
  assert.equal((await fetch(`${url}/api/v1/agent/runs`)).status, 204);
  assert.deepEqual(waited, ['/api/v1/agent/runs']);
});
