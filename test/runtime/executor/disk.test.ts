import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { diskUsage, parseDu, watchDisk, type DiskUsage } from '../../../runtime/executor/disk.ts';
import { eventually } from '../../helpers/eventually.ts';
import { scratch } from './helpers.ts';

/** The workspace's disk measure (docs/security.md#limits), with the real `du`. */

const MB = 1024 * 1024;

test('a measure counts what is allocated: each inode once, no link followed, a sparse file by its blocks', async (t) => {
  const dir = scratch(t);
  const ws = path.join(dir, 'ws');
  mkdirSync(path.join(ws, 'a'), { recursive: true });
  writeFileSync(path.join(ws, 'a', 'big'), randomBytes(3 * MB));
  const alone = (await diskUsage(ws)).bytes;
  assert.ok(alone >= 3 * MB && alone < 4 * MB, `${alone}`);
  // A hard link, a link to a large tree outside, and a file of 1 GiB that holds nothing.
  linkSync(path.join(ws, 'a', 'big'), path.join(ws, 'again'));
  const outside = path.join(dir, 'outside');
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'huge'), randomBytes(8 * MB));
  symlinkSync(outside, path.join(ws, 'link'));
  writeFileSync(path.join(ws, 'sparse'), '');
  truncateSync(path.join(ws, 'sparse'), 1024 * MB);
  const after = await diskUsage(ws);
  assert.equal(after.unreadable, undefined);
  assert.ok(after.bytes - alone < MB, `${after.bytes} against ${alone}`);
  // A workspace not made yet takes nothing.
  assert.deepEqual(await diskUsage(path.join(dir, 'not-yet')), { bytes: 0 });
});

test('a directory the runtime may not read makes the measure name it; a vanished entry does not', async (t) => {
  const dir = scratch(t);
  const ws = path.join(dir, 'ws');
  mkdirSync(path.join(ws, 'hidden', 'deeper'), { recursive: true });
  writeFileSync(path.join(ws, 'hidden', 'deeper', 'x'), randomBytes(MB));
  chmodSync(path.join(ws, 'hidden'), 0o000);
  try {
    await measureHidden(dir, ws);
  } finally {
    // Readable again before the scratch directory is removed.
    chmodSync(path.join(ws, 'hidden'), 0o700);
  }
  // The other words du has: BSD's, and an entry removed while it measured (not a refusal).
  assert.deepEqual(parseDu('/w', '12\t/w\n', 'du: /w/sub/dir: Permission denied\n'), { bytes: 12 * 1024, unreadable: 'sub/dir' });
  assert.deepEqual(parseDu('/w', '12\t/w\n', "du: cannot access '/w/tmp.123': No such file or directory\n"), { bytes: 12 * 1024 });
});

async function measureHidden(dir: string, ws: string): Promise<void> {
  if (process.getuid?.() === 0) {
    // Root reads it anyway; du's own words for a directory it cannot read, from du run as nobody.
    assert.equal((await diskUsage(ws)).unreadable, undefined);
    chmodSync(dir, 0o755);
    chmodSync(ws, 0o755);
    let stderr = '';
    let stdout = '';
    try {
      stdout = execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'du', '-s', '-k', '-x', '--', ws], { env: { LC_ALL: 'C', PATH: process.env.PATH }, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      const e = err as { stdout: string; stderr: string; status: number };
      assert.equal(e.status, 1, e.stderr);
      stdout = e.stdout;
      stderr = e.stderr;
    }
    assert.deepEqual(parseDu(ws, stdout, stderr), { bytes: Number(/^\d+/.exec(stdout)![0]) * 1024, unreadable: 'hidden' });
  } else {
    assert.equal((await diskUsage(ws)).unreadable, 'hidden');
  }
}

test('the watch reports once, the first time the limit is passed, and a stopped watch measures no more', async (t) => {
  const dir = scratch(t);
  const ws = path.join(dir, 'ws');
  mkdirSync(ws);
  const told: DiskUsage[] = [];
  const watch = watchDisk(ws, 2 * MB, 20, (u) => told.push(u));
  t.after(() => watch.stop());
  writeFileSync(path.join(ws, 'one'), randomBytes(MB));
  // Measured several times under the limit: nothing said.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(told.length, 0);
  writeFileSync(path.join(ws, 'two'), randomBytes(2 * MB));
  await eventually(async () => told.length, 'the report', { until: (n) => n > 0 });
  writeFileSync(path.join(ws, 'three'), randomBytes(MB));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(told.length, 1);
  assert.ok(told[0].bytes > 2 * MB);

  const quiet: DiskUsage[] = [];
  const stopped = watchDisk(ws, MB, 20, (u) => quiet.push(u));
  stopped.stop();
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(quiet, []);
});
