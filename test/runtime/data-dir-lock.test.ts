import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../core/errors.ts';
import { execCli, startCli } from '../helpers/cli.ts';
import { startTestRuntime } from './helpers.ts';

/** One runtime per data dir (docs/runtime.md#the-data-dir): runtime.lock, held from before the store opens until the stop. */

const deadPid = () => Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);

test('a second runtime on a data dir in use is refused in one sentence, and the first one keeps its runtime.json and serves on', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-lock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = startCli(['serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', FACTORY_LOG_LEVEL: 'warn' } });
  t.after(() => first.child.kill('SIGKILL'));
  await first.waitFor(() => /listening on http:\/\/\S+\n/.test(first.stdout()), 'the URL');
  const url = /listening on (http:\/\/\S+)\n/.exec(first.stdout())![1];
  assert.equal(readFileSync(join(dataDir, 'runtime.lock'), 'utf8'), `${first.child.pid}\n`);

  // In this process, and as the CLI a user would run next (`factory dev` on the same data dir).
  await assert.rejects(startTestRuntime({ dataDir }), (e: unknown) => e instanceof CliError && e.message === `the data dir ${dataDir} is in use by another runtime (pid ${first.child.pid}, ${url}); stop it first, or give this one its own --data-dir.`);
  const second = await execCli(['serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '' } });
  assert.equal(second.code, 1);
  assert.equal(second.stderr, `error: the data dir ${dataDir} is in use by another runtime (pid ${first.child.pid}, ${url}); stop it first, or give this one its own --data-dir.\n`);
  assert.equal(JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')).url, url);
  assert.equal((await fetch(`${url}/healthz`)).status, 200);

  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.equal(existsSync(join(dataDir, 'runtime.lock')), false, 'a clean stop releases the data dir');
  const after = await startTestRuntime({ dataDir });
  await after.close();
});

test('a lock left by a process that is gone is taken over; the same data dir twice in one process is refused', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-lock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  writeFileSync(join(dataDir, 'runtime.lock'), `${deadPid()}\n`);
  const rt = await startTestRuntime({ dataDir });
  assert.equal(readFileSync(join(dataDir, 'runtime.lock'), 'utf8'), `${process.pid}\n`);
  await assert.rejects(startTestRuntime({ dataDir }), (e: unknown) => e instanceof CliError && /is in use by another runtime \(pid \d+, http:\/\/127\.0\.0\.1:\d+\)/.test(e.message));
  assert.equal((await rt.fetch('/healthz', { key: null })).status, 200);
  await rt.close();
  assert.equal(existsSync(join(dataDir, 'runtime.lock')), false);
});
