import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, ROOT } from '../../helpers/cli.ts';
import { testExecutor } from './helpers.ts';

/** What each open descriptor of `pid` points at. */
function descriptors(pid: number | 'self'): Map<number, string> {
  const out = new Map<number, string>();
  for (const name of readdirSync(`/proc/${pid}/fd`)) {
    try {
      out.set(Number(name), readlinkSync(`/proc/${pid}/fd/${name}`));
    } catch {
      // Closed meanwhile.
    }
  }
  return out;
}

/**
 * Starts a child node with `file` open at fd 100, without close-on-exec, as a shell's
 * `exec 100<file` would hand it down (Node itself marks a few low descriptors close-on-exec at
 * start, not one this high); resolves once `until` holds for its stdout.
 */
function childWith(file: string, args: string[], until: (out: string) => boolean): Promise<{ out: string; pid: number; stop: () => Promise<void> }> {
  const fd = openSync(file, 'r');
  const stdio: ('ignore' | 'pipe' | number)[] = ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(97).fill('ignore'), fd];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio });
  closeSync(fd);
  let out = '';
  let err = '';
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      if (until(out)) resolve({ out, pid: child.pid!, stop: async () => void (child.kill('SIGTERM'), await exited) });
    });
    child.stderr!.on('data', (d) => (err += d));
    child.on('exit', (code) => reject(new Error(`child exited with ${code} first: ${out}${err}`)));
  });
}

test('descriptors inherited without close-on-exec are closed; stdio and the process\'s own stay', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-fds-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const secret = path.join(dir, 'host-secret');
  writeFileSync(secret, 'root-only\n', { mode: 0o600 });
  const script = [
    "import { closeInheritedDescriptors } from './runtime/executor/descriptors.ts';",
    "import { readdirSync } from 'node:fs';",
    'const closed = closeInheritedDescriptors();',
    "console.log(JSON.stringify({ closed, left: readdirSync('/proc/self/fd').map(Number) }));",
  ].join('\n');
  const child = await childWith(secret, ['--import', 'tsx', '--input-type=module', '-e', script], (out) => out.endsWith('\n'));
  await child.stop();
  const { closed, left } = JSON.parse(child.out) as { closed: number[]; left: number[] };
  assert.ok(closed.includes(100), JSON.stringify(closed));
  assert.ok(!left.includes(100));
  for (const fd of [0, 1, 2]) assert.ok(left.includes(fd), `fd ${fd} stays`);
});

test('serve closes what it inherited before any run can see it', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-fds-serve-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(`${path.join(dir, 'data')}-workspaces`, { recursive: true, force: true });
  });
  const secret = path.join(dir, 'host-secret');
  writeFileSync(secret, 'root-only\n', { mode: 0o600 });
  const child = await childWith(secret, [BIN, 'serve', '--port', '0', '--data-dir', path.join(dir, 'data'), '--executor', testExecutor()], (out) =>
    out.includes('factory runtime listening'),
  );
  try {
    const open = [...descriptors(child.pid).values()];
    assert.ok(!open.includes(secret), open.join('\n'));
  } finally {
    await child.stop();
  }
});
