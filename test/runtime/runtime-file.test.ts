import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestRuntime } from './helpers.ts';

/**
 * `<data-dir>/runtime.json` (docs/runtime.md#the-data-dir): written once the runtime listens, so
 * the CLI finds it without flags; mode 0600; removed on a clean stop, but only while it is still
 * this runtime's own (another start on the same data dir may have replaced it).
 */

test('runtime.json names the URL and pid while the runtime runs, and goes away on a clean stop', async () => {
  const rt = await startTestRuntime({ keepDataDir: true });
  const file = join(rt.dataDir, 'runtime.json');
  try {
    const body = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ['url', 'pid', 'started_at']);
    assert.equal(body.url, rt.url);
    assert.equal(body.pid, process.pid);
    assert.match(String(body.started_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    await rt.close();
    assert.equal(existsSync(file), false);
  } finally {
    rmSync(rt.dataDir, { recursive: true, force: true });
  }
});

test('a stop leaves a runtime.json another runtime wrote in the meantime', async () => {
  const rt = await startTestRuntime({ keepDataDir: true });
  const file = join(rt.dataDir, 'runtime.json');
  try {
    const other = JSON.stringify({ url: 'http://127.0.0.1:1', pid: process.pid, started_at: '2026-01-01T00:00:00.000Z' });
    writeFileSync(file, other);
    await rt.close();
    assert.equal(readFileSync(file, 'utf8'), other);
  } finally {
    rmSync(rt.dataDir, { recursive: true, force: true });
  }
});

test('a wildcard bind is recorded as the loopback URL a CLI on this machine can reach', async () => {
  const rt = await startTestRuntime({ flags: { host: '0.0.0.0' } });
  try {
    const body = JSON.parse(readFileSync(join(rt.dataDir, 'runtime.json'), 'utf8')) as { url: string };
    assert.equal(body.url, `http://127.0.0.1:${rt.port}`);
    assert.equal((await fetch(`${body.url}/healthz`)).status, 200);
  } finally {
    await rt.stop();
  }
});
