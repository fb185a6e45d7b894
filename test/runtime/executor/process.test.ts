import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
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

test('a command whose background process left its group (setsid) and holds the output pipe still ends', { timeout: 60_000 }, async (t) => {
  const { runInGroup } = await import('../../../runtime/executor/process.ts');
  // A duration no other process sleeps, so the test can find and end it.
  const marker = `sleep 300.${process.pid}${Date.now() % 100000}`;
  t.after(() => {
    spawn('pkill', ['-f', marker]).on('error', () => {});
  });
  let output = '';
  // The sleep inherits the shell's stdout, so the pipe stays open after the shell exits.
  const exit = await runInGroup({
    // The shell waits until the sleep is the leader of its own session (field 6 of its stat), so
    // that it has left the group before the shell exits and the group is ended.
    argv: ['/bin/sh', '-c', `setsid ${marker} & p=$!; until [ "$(cut -d' ' -f6 /proc/$p/stat 2>/dev/null)" = "$p" ]; do :; done; echo started`],
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    onStdout: (c) => (output += c.toString()),
  });
  assert.equal(exit.code, 0);
  assert.equal(output, 'started\n');
  assert.equal(exit.timedOut, false);
  // It ended while the process that held its output still runs (not because that one ended).
  const alive = spawnSync('pgrep', ['-f', marker]);
  assert.equal(alive.status, 0, 'the setsid process is still running');
});

test('out of file descriptors, a command fails to start with EMFILE and the process goes on (it crashed on the unheard error)', async (t) => {
  const dir = scratch(t);
  const script = path.join(dir, 'emfile.mts');
  // Every descriptor taken but two: too few for the command's pipes.
  writeFileSync(
    script,
    `import { openSync, closeSync } from 'node:fs';
import { runInGroup } from ${JSON.stringify(path.resolve(import.meta.dirname, '../../../runtime/executor/process.ts'))};
const held: number[] = [];
try { for (;;) held.push(openSync('/dev/null', 'r')); } catch {}
closeSync(held.pop()!); closeSync(held.pop()!);
const exit = await runInGroup({ argv: ['/bin/true'], cwd: '/', env: {}, envScript: 'x' });
for (const fd of held) closeSync(fd);
await new Promise((resume) => setTimeout(resume, 100));
console.log(JSON.stringify({ code: exit.code, spawnError: exit.spawnError?.code }));
`,
  );
  const r = spawnSync('/bin/sh', ['-c', `ulimit -n 256 && exec "${process.execPath}" --import tsx "${script}"`], { cwd: path.resolve(import.meta.dirname, '../../..'), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { code: null, spawnError: 'EMFILE' });
});
