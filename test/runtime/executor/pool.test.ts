import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../../runtime/clock.ts';
import { parseConfig } from '../../../runtime/config.ts';
import { ExecutorPool } from '../../../runtime/executor/pool.ts';
import { createLogger } from '../../../runtime/log.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { scratch } from './helpers.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startTestRuntime } from '../helpers.ts';
import { applyEnvironments, createRun, envYaml, waitForRun } from '../routes/runs-helpers.ts';

test('the clean-up timer removes workspaces of runs finished longer ago than the retention; transcripts stay (docs/runs.md)', async (t) => {
  const dir = scratch(t);
  const clock = new FakeClock('2026-03-01T10:00:00Z');
  const store = openStore({ path: path.join(dir, 'factory.db'), clock });
  const config = parseConfig({ dataDir: path.join(dir, 'data') }, {});
  const pool = new ExecutorPool({ config, store, clock, log: createLogger({ level: 'silent' }) }, { pollMs: 20, cleanupEveryMs: 20 });
  t.after(async () => {
    await pool.stop();
    store.close();
  });

  // A run whose environment does not exist: claimed (it started), then FAILED at once.
  const run = store.runs.create({ prompt: 'x', environmentId: 'missing', source: 'API', creator: { type: 'user', name: 'tester' } });
  await pool.start();
  await eventually(() => store.runs.get(run.run_id)?.state === 'FAILED', 'the run to finish');
  // Workspaces live in the work dir, outside the data dir (default `<data-dir>-workspaces`).
  assert.equal(config.workDir, path.join(dir, 'data-workspaces'));
  const ws = path.join(config.workDir, run.run_id);
  mkdirSync(ws, { recursive: true });
  writeFileSync(path.join(ws, 'left-over.txt'), 'x');

  // Within the retention period nothing is removed.
  assert.equal(await pool.cleanWorkspaces(), 0);
  assert.ok(existsSync(ws));

  // Past it, the timer (not a direct call) removes the workspace.
  clock.advance(config.limits.workspaceRetentionHours * 3_600_000 + 1_000);
  await eventually(() => !existsSync(ws), 'the timer to remove the workspace');
  assert.ok(store.runs.events(run.run_id, 0, 100).length > 0, 'the transcript stays');
  await pool.cleanWorkspaces(); // lets a pass still under way finish recording the removal
  assert.deepEqual(store.runs.workspacesDue(clock.now()), [], 'a removed workspace is not due again');
});

test('a run that fails its disk limit loses its workspace at once, not after the retention; its transcript stays', async (t) => {
  const rt = await startTestRuntime({ flags: { sandboxDiskMb: '1' } });
  t.after(() => rt.stop());
  await applyEnvironments(rt, { hog: envYaml({ command: ['/bin/sh', '-c', 'head -c 3000000 /dev/urandom > big'] }), fine: envYaml({ command: ['/bin/sh', '-c', 'echo small > small'] }) });
  const runs: Record<string, string> = {};
  for (const env of ['hog', 'fine']) {
    const { res, body } = await createRun(rt, { prompt: 'x', config: { environment_id: env } });
    assert.equal(res.status, 201);
    runs[env] = body.run_id;
  }
  const hog = await waitForRun(rt, runs.hog);
  assert.equal(hog.state, 'FAILED', hog.status_message);
  assert.equal(hog.error_code, 'workspace_too_large');
  assert.equal((await waitForRun(rt, runs.fine)).state, 'SUCCEEDED');
  const workDir = rt.config.workDir;
  await eventually(() => !existsSync(path.join(workDir, runs.hog)), 'the over-limit workspace to go');
  assert.ok(existsSync(path.join(workDir, runs.fine, 'small')), 'a workspace within its limit is kept');
  assert.ok(rt.store.runs.events(runs.hog, 0, 100).length > 0, 'the transcript stays');
});
