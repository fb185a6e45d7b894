import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../../../cli/main.ts';
import { bufferIO } from '../helpers.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';


test('factory key create|list|revoke against a real runtime', async () => {
  const rt = await startTestRuntime();
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  try {
    let io = bufferIO(env);
    assert.equal(await runCli(['key', 'create', '--name', 'alice', '--kind', 'personal', '--scope', 'manage', '--scope', 'runs', '--factory', 'payments'], io), 0, io.err);
    const raw = io.out.trim();
    assert.match(raw, /^fk_[A-Za-z0-9_-]{43}$/, 'stdout is the key alone');
    assert.match(io.err, /created key_\w+ \(personal "alice", scopes: runs,manage\(payments\)\)/);

    io = bufferIO({ ...env, FACTORY_API_KEY: raw });
    assert.equal(await runCli(['key', 'list'], io), 1, 'a manage key may not list keys');
    assert.match(io.err, /does not have the "admin" scope/);

    io = bufferIO(env);
    assert.equal(await runCli(['key', 'list', '--json'], io), 0, io.err);
    const keys = JSON.parse(io.out) as { id: string; name: string }[];
    assert.deepEqual(keys.map((k) => k.name), ['admin', 'alice']);
    assert.ok(!io.out.includes(raw));

    io = bufferIO(env);
    assert.equal(await runCli(['key', 'list'], io), 0);
    assert.match(io.out, /^ID\s+NAME\s+KIND\s+SCOPES\s+CREATED\s+STATUS\n/);

    io = bufferIO(env);
    assert.equal(await runCli(['key', 'revoke', keys[1].id], io), 0, io.err);
    assert.match(io.out, /revoked key_\w+ \("alice"\)/);
    assert.equal(rt.store.keys.findByRaw(raw)?.revoked_at !== null, true);

    io = bufferIO(env);
    assert.equal(await runCli(['key', 'create', '--name', 'x', '--kind', 'robot'], io), 2);
    io = bufferIO(env);
    assert.equal(await runCli(['key', 'create', '--name', 'x', '--kind', 'agent', '--scope', 'root'], io), 2);
  } finally {
    await rt.stop();
  }
});

test('factory key create --scope worker makes a key for `factory worker` that the run API refuses (docs/runs.md#workers)', async () => {
  const rt = await startTestRuntime();
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  try {
    let io = bufferIO(env);
    assert.equal(await runCli(['key', 'create', '--name', 'box', '--kind', 'agent', '--scope', 'worker'], io), 0, io.err);
    assert.match(io.err, /created key_\w+ \(agent "box", scopes: worker\)/);
    const raw = io.out.trim();
    io = bufferIO({ ...env, FACTORY_API_KEY: raw });
    assert.equal(await runCli(['run', 'list'], io), 1);
    assert.match(io.err, /does not have the "runs" scope/);
    const claim = await rt.fetch('/api/v1/worker/claim', { method: 'POST', key: raw, json: { worker: 'box', worker_id: 'box-00001' } });
    assert.equal(claim.status, 204);
  } finally {
    await rt.stop();
  }
});
