import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../core/errors.ts';
import { execCli, ROOT, startCli } from '../helpers/cli.ts';
import { startTestRuntime } from './helpers.ts';

/** One runtime per data dir (docs/runtime.md#the-data-dir): the kernel's lock on runtime.lock, from before the store opens until the stop. */


test('a second runtime on a data dir in use is refused in one sentence, and the first one keeps its runtime.json and serves on', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-lock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = startCli(['serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', FACTORY_LOG_LEVEL: 'warn' } });
  t.after(() => first.child.kill('SIGKILL'));
  await first.waitFor(() => /listening on http:\/\/\S+\n/.test(first.stdout()), 'the URL');
  const url = /listening on (http:\/\/\S+)\n/.exec(first.stdout())![1];
  const sentence = `the data dir ${dataDir} is in use by another runtime (pid ${first.child.pid}, ${url}); stop it first, or give this one its own --data-dir.`;

  // In this process, and as the CLI a user would run next (`factory dev` on the same data dir).
  await assert.rejects(startTestRuntime({ dataDir }), (e: unknown) => e instanceof CliError && e.message === sentence);
  const second = await execCli(['serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '' } });
  assert.equal(second.code, 1);
  assert.equal(second.stderr, `error: ${sentence}\n`);
  assert.equal(JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')).url, url);
  assert.equal((await fetch(`${url}/healthz`)).status, 200);

  // SIGKILL: no clean stop, and the kernel's lock goes with the process all the same.
  first.child.kill('SIGKILL');
  await first.exited;
  const after = await startTestRuntime({ dataDir });
  await after.close();
});

test('four starts at the same instant: exactly one holds the data dir', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-lock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const script = `import { lockDataDir } from ${JSON.stringify(join(ROOT, 'runtime/data-dir-lock.ts'))};
    await new Promise((r) => setTimeout(r, Number(process.argv[1]) - Date.now()));
    try { lockDataDir(${JSON.stringify(dataDir)}); process.stdout.write('held'); process.stdin.resume(); await once(process.stdin, 'end'); }
    catch (e) { process.stdout.write(/is in use by another runtime/.test(e.message) ? 'busy' : 'error: ' + e.message); }`;
  const at = Date.now() + 1500;
  const children = Array.from({ length: 4 }, () =>
    spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import { once } from 'node:events';\n${script}`, String(at)], { cwd: ROOT }),
  );
  // The one that holds the lock keeps it until every start has said what it got (on a loaded
  // machine a start may come late: it must still find the lock held, not released).
  const outs = await Promise.all(children.map(async (c) => String((await once(c.stdout, 'data'))[0])));
  for (const c of children) c.stdin.end();
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
  assert.deepEqual(outs.sort(), ['busy', 'busy', 'busy', 'held']);
});

test('a lock whose holder let go of its object stays held through a garbage collection', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-lock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  // The child drops what lockDataDir returned and collects garbage twice before it says so.
  const script = `import { once } from 'node:events';
    import { lockDataDir } from ${JSON.stringify(join(ROOT, 'runtime/data-dir-lock.ts'))};
    lockDataDir(${JSON.stringify(dataDir)});
    globalThis.gc(); await new Promise((r) => setImmediate(r)); globalThis.gc();
    process.stdout.write('collected'); process.stdin.resume(); await once(process.stdin, 'end');`;
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT });
  t.after(() => child.kill('SIGKILL'));
  assert.equal(String((await once(child.stdout, 'data'))[0]), 'collected');
  const { lockDataDir } = await import('../../runtime/data-dir-lock.ts');
  assert.throws(() => lockDataDir(dataDir), (e: unknown) => e instanceof CliError && /is in use by another runtime/.test(e.message));
  child.stdin.end();
  await once(child, 'exit');
  lockDataDir(dataDir).release();
});

test('a runtime.lock left by an older release (a pid as text) does not stop a start; the same data dir twice in one process is refused', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-lock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  writeFileSync(join(dataDir, 'runtime.lock'), '12345\n');
  const rt = await startTestRuntime({ dataDir });
  await assert.rejects(startTestRuntime({ dataDir }), (e: unknown) => e instanceof CliError && /is in use by another runtime \(pid \d+, http:\/\/127\.0\.0\.1:\d+\)/.test(e.message));
  assert.equal((await rt.fetch('/healthz', { key: null })).status, 200);
  await rt.close();
  // Released on a clean stop: the next start goes through.
  const again = await startTestRuntime({ dataDir });
  await again.close();
});
