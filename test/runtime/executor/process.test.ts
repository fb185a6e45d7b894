import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { killOrphanGroup } from '../../../runtime/executor/process.ts';
import { isGone, scratch } from './helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * A group like one a crashed runtime left behind: a detached shell (leader of its own group) with
 * a grandchild `sleep`, started with `env`. Resolves with the group id and the sleep's pid.
 */
async function orphanGroup(t: { after: (fn: () => void) => void }, env: Record<string, string>, leaderExits = false) {
  const dir = scratch(t);
  const pidFile = path.join(dir, 'sleep.pid');
  const script = `sleep 300 & echo $! > '${pidFile}'; ${leaderExits ? 'exit 0' : 'wait'}`;
  const child = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
  const pgid = child.pid!;
  const exited = new Promise((r) => child.once('exit', r));
  t.after(() => {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  await eventually(() => {
    try {
      return readFileSync(pidFile, 'utf8').trim() !== '';
    } catch {
      return false;
    }
  }, 'the sleep to start');
  if (leaderExits) await exited;
  return { pgid, leader: child.pid!, sleep: Number(readFileSync(pidFile, 'utf8')), exited };
}

test('killOrphanGroup kills a group whose processes carry the run id, leader and grandchild', async (t) => {
  const g = await orphanGroup(t, { FACTORY_RUN_ID: 'run_aaaa' });
  assert.equal(killOrphanGroup(g.pgid, 'run_aaaa'), 'killed');
  await eventually(() => isGone(g.leader) && isGone(g.sleep), 'the group to be gone');
});

test('killOrphanGroup finds the group by a surviving member when the leader already exited', async (t) => {
  const g = await orphanGroup(t, { FACTORY_RUN_ID: 'run_bbbb' }, true);
  assert.equal(killOrphanGroup(g.pgid, 'run_bbbb'), 'killed');
  await eventually(() => isGone(g.sleep), 'the sleep to be gone');
});

test('killOrphanGroup leaves alone a group that is not the run\'s (a reused group id)', async (t) => {
  const other = await orphanGroup(t, { FACTORY_RUN_ID: 'run_cccc_longer' });
  const unmarked = await orphanGroup(t, {});
  // Another run's id that merely starts with this one, and a group with no run id at all.
  assert.equal(killOrphanGroup(other.pgid, 'run_cccc'), 'unverified');
  assert.equal(killOrphanGroup(unmarked.pgid, 'run_cccc'), 'unverified');
  assert.equal(isGone(other.sleep) || isGone(unmarked.sleep) || isGone(other.leader), false);
  // A pid that led no group (this test's own child, reaped): nothing to kill.
  const done = spawn('true');
  await new Promise((r) => done.once('exit', r));
  assert.equal(killOrphanGroup(done.pid!, 'run_cccc'), 'gone');
  assert.equal(killOrphanGroup(0, 'run_cccc'), 'gone');
  assert.equal(killOrphanGroup(1, 'run_cccc'), 'gone');
});
