import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'factory.js');

/** Starts `factory serve` as a child process; resolves once it printed its URL. */
function serve(dataDir: string) {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FACTORY_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const started = new Promise<{ url: string; out: () => string }>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)\n/.exec(out);
      if (m && /admin key: .*\n/.test(out)) resolve({ url: m[1], out: () => out });
    });
    child.on('close', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  return { child, started, exited };
}

test('factory serve: prints URL and admin key path; SIGTERM exits 0; a restart keeps the key', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-serve-'));
  try {
    const first = serve(dataDir);
    const { url, out } = await first.started;
    assert.match(out(), new RegExp(`admin key: ${join(dataDir, 'admin.key').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(created now`));
    const key = readFileSync(join(dataDir, 'admin.key'), 'utf8').trim();
    assert.equal(statSync(join(dataDir, 'admin.key')).mode & 0o777, 0o600);
    assert.ok(!out().includes(key), 'the key is never printed');
    const res = await fetch(url + '/api/v1/keys', { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    assert.match(out(), /received SIGTERM/);

    const second = serve(dataDir);
    const s = await second.started;
    assert.doesNotMatch(s.out(), /created now/);
    assert.equal(readFileSync(join(dataDir, 'admin.key'), 'utf8').trim(), key);
    const keys = (await (await fetch(s.url + '/api/v1/keys', { headers: { Authorization: `Bearer ${key}` } })).json()) as { keys: unknown[] };
    assert.equal(keys.keys.length, 1);
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 0);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('factory serve: an invalid flag is a usage error naming it', async () => {
  const bad = spawn(process.execPath, [BIN, 'serve', '--port', 'http'], { env: { PATH: process.env.PATH ?? '' } });
  let err = '';
  bad.stderr.on('data', (d) => (err += d));
  const code = await new Promise((r) => bad.on('close', r));
  assert.equal(code, 2);
  assert.match(err, /--port must be an integer/);
});
