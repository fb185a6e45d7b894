import { test } from 'node:test';
import { connect } from 'node:net';
import assert from 'node:assert/strict';
import { engines, postgresUrl, testDatabase } from '../helpers/postgres.ts';
import { startTestRuntime } from './helpers.ts';
import { applyEnvironments, envYaml } from './routes/runs-helpers.ts';
import { FactoryError } from '../../core/errors.ts';
import { systemClock } from '../../runtime/clock.ts';

/**
 * A NUL character (U+0000) from a client is a 400 naming it on both engines (docs/api.md#conventions):
 * PostgreSQL's text cannot hold one and used to refuse the statement, a 500; SQLite kept it.
 */
for (const engine of engines()) {
  test(`${engine}: a NUL in a path, a query or a JSON body is a 400 saying so, and nothing is written`, async (t) => {
    const postgres = engine === 'postgres' ? await postgresUrl(t) : undefined;
    if (engine === 'postgres' && !postgres) return;
    const rt = await startTestRuntime(postgres ? { postgres } : { sqlite: true });
    t.after(() => rt.stop());
    rt.services.executor!.pause();
    await applyEnvironments(rt, { sandbox: envYaml({ command: ['true'] }) });

    for (const path of ['/api/v1/agent/runs/run_%00', '/api/v1/agent/runs?q=a%00b', '/api/v1/webhooks/wh_%00/deliveries', '/api/v1/automations/a%00/b', '/api/v1/agent/schedules/a%00']) {
      const res = await rt.fetch(path);
      assert.equal(res.status, 400, path);
      const p = (await res.json()) as { code: string; detail: string };
      assert.equal(p.code, 'invalid_request');
      assert.equal(p.detail, "The request's path or query has a NUL character (%00), which no id or value of this API holds.");
    }
    const bodies: [string, unknown, string][] = [
      ['/api/v1/agent/runs', { prompt: 'a\u0000b', config: { environment_id: 'sandbox' } }, 'The request body has a string with a NUL character (U+0000) at /prompt, which would not be stored as sent.'],
      ['/api/v1/agent/runs', { prompt: 'p', metadata: { 'k\u0000': 1 } }, 'The request body has a key with a NUL character (U+0000) in /metadata, which would not be stored as sent.'],
      ['/api/v1/secrets', { name: 'x', value: '\u0000' }, 'The request body has a string with a NUL character (U+0000) at /value, which would not be stored as sent.'],
    ];
    for (const [path, json, detail] of bodies) {
      const res = await rt.fetch(path, { method: 'POST', json });
      assert.equal(res.status, 400, path);
      assert.deepEqual(((await res.json()) as { code: string; detail: string }).detail, detail);
    }
    assert.equal(rt.store.runs.list({ limit: 10 }).runs.length, 0);
    assert.equal(rt.store.secrets.get('x'), undefined);
  });
}

test('postgres: a NUL that PostgreSQL refuses in a statement\'s values is the client\'s mistake (a 400), and the connection goes on', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const store = db.open({ clock: systemClock });
  assert.throws(
    () => store.runs.get('run_\u0000'),
    (e: unknown) => e instanceof FactoryError && e.status === 400 && /NUL character/.test(e.message),
  );
  // The connection is still usable afterwards.
  assert.equal(store.runs.get('run_abcdefghijklmnopqrstuvwxyz'), undefined);
});

/** One raw HTTP/1.1 exchange (a target fetch would never send), answered in full. */
function rawExchange(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(head));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

test('a request target with no path (http:// with no host, *, a broken IPv6 literal) is a 400 problem, never a 500', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  for (const target of ['http://', 'ftp://', 'http://[::1/x', '*']) {
    const answer = await rawExchange(rt.port, `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`);
    assert.match(answer, /^HTTP\/1\.1 400 /, target);
    assert.match(answer, /content-type: application\/problem\+json/i, target);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; detail: string };
    assert.equal(body.code, 'invalid_request', target);
    assert.equal(body.detail, 'The request target is neither a path nor an absolute http(s) URL with a host.');
  }
  // An absolute-form target with a host still reaches its route.
  const ok = await rawExchange(rt.port, `GET http://x/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  assert.match(ok, /^HTTP\/1\.1 200 /);
});
