import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CliError, FactoryError } from '../../core/errors.ts';
import { createClient, resolveClientFlags } from '../../cli/client.ts';
import type { CliIO } from '../../cli/io.ts';
import { startTestRuntime } from '../runtime/helpers.ts';

const io = (env: Record<string, string>, cwd: string): CliIO => ({
  stdout: () => {},
  stderr: () => {},
  env,
  cwd,
  stdin: Readable.from([]),
  stdinIsTTY: false,
  stdoutIsTTY: false,
});

test('server and key: flags, then env, then <data-dir>/admin.key; none is a CliError saying how', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-client-'));
  try {
    mkdirSync(join(dir, '.factory'));
    writeFileSync(join(dir, '.factory', 'admin.key'), 'fk_fromfile\n');
    mkdirSync(join(dir, 'other'));
    writeFileSync(join(dir, 'other', 'admin.key'), 'fk_other\n');

    assert.deepEqual(resolveClientFlags({}, io({}, dir)), { server: 'http://127.0.0.1:8080', apiKey: 'fk_fromfile' });
    assert.deepEqual(resolveClientFlags({ dataDir: 'other' }, io({}, dir)).apiKey, 'fk_other');
    assert.deepEqual(resolveClientFlags({}, io({ FACTORY_DATA_DIR: join(dir, 'other') }, '/')).apiKey, 'fk_other');
    assert.deepEqual(
      resolveClientFlags({}, io({ FACTORY_SERVER: 'http://h:1/', FACTORY_API_KEY: 'fk_env' }, dir)),
      { server: 'http://h:1', apiKey: 'fk_env' },
    );
    assert.deepEqual(
      resolveClientFlags({ server: 'https://x', apiKey: 'fk_flag' }, io({ FACTORY_SERVER: 'http://h:1', FACTORY_API_KEY: 'fk_env' }, dir)),
      { server: 'https://x', apiKey: 'fk_flag' },
    );
    assert.throws(() => resolveClientFlags({}, io({}, '/nonexistent-dir')), (e: unknown) => e instanceof CliError && /FACTORY_API_KEY/.test(e.message));
    assert.throws(() => resolveClientFlags({ server: 'ftp://x', apiKey: 'k' }, io({}, dir)), (e: unknown) => e instanceof CliError && e.exitCode === 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('request: JSON on success, FactoryError from problem+json, CliError when unreachable', async () => {
  const rt = await startTestRuntime();
  try {
    const client = createClient({ server: rt.url + '/', apiKey: rt.adminKey });
    const created = await client.send<{ name: string }>('POST', '/api/v1/secrets', { name: 's1', value: 'v' });
    assert.equal(created.status, 201);
    assert.equal(created.body.name, 's1');
    assert.equal(created.headers.get('location'), '/api/v1/secrets/s1');
    assert.equal(await client.request('DELETE', '/api/v1/secrets/s1'), undefined);
    await assert.rejects(client.request('POST', '/api/v1/secrets', { name: '!' , value: 'v' }), (e: unknown) => {
      assert.ok(e instanceof FactoryError);
      assert.equal(e.code, 'invalid_request');
      assert.equal(e.errors?.[0].pointer, '/name');
      return true;
    });
    await assert.rejects(createClient({ server: rt.url, apiKey: 'fk_wrong' }).request('GET', '/api/v1/keys'), (e: unknown) => e instanceof FactoryError && e.code === 'authentication_required');
  } finally {
    await rt.stop();
  }
  await assert.rejects(
    createClient({ server: rt.url, apiKey: 'k' }).request('GET', '/healthz'),
    (e: unknown) => e instanceof CliError && e.message === `cannot reach the runtime at ${rt.url}: is \`factory serve\` running?`,
  );
});
