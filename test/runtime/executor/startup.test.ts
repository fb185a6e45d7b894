/**
 * Never weaken silently (docs/security.md#executors): `serve` refuses to start when the sandbox
 * cannot run, `serve --executor direct` starts with a warning, and `dev` says in one line that
 * it carries on with direct. bubblewrap is made unavailable through FACTORY_BWRAP.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCli, terminalEnv } from '../../helpers/cli.ts';

const MISSING = '/nonexistent/factory-test/bwrap';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-startup-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function stop(cli: ReturnType<typeof startCli>): Promise<void> {
  cli.child.kill('SIGTERM');
  await cli.exited;
}

test('serve without a working bubblewrap refuses to start in one sentence, exit 1, nothing listening, nothing written', async (t) => {
  const dir = tempDir(t);
  const cli = startCli(['serve', '--port', '0', '--data-dir', path.join(dir, 'data')], { cwd: dir, env: terminalEnv({ FACTORY_BWRAP: MISSING }) });
  assert.equal(await cli.exited, 1);
  assert.equal(cli.stdout(), '', 'no log line: no admin key was created');
  assert.equal(existsSync(path.join(dir, 'data')), false, 'no data dir: a runtime that cannot run writes nothing');
  const lines = cli.stderr().trim().split('\n');
  assert.equal(lines.length, 1, cli.stderr());
  assert.equal(
    lines[0],
    `error: runs cannot start: bubblewrap (${MISSING}) was not found; install it (apt-get install bubblewrap), or pass --executor direct to run commands without a sandbox, knowingly (docs/security.md#executors).`,
  );
});

test('serve --executor direct starts without bubblewrap, with a warning that runs are not sandboxed', async (t) => {
  const dir = tempDir(t);
  const cli = startCli(['serve', '--port', '0', '--data-dir', path.join(dir, 'data'), '--executor', 'direct'], { cwd: dir, env: terminalEnv({ FACTORY_BWRAP: MISSING }) });
  t.after(() => stop(cli));
  await cli.waitFor(() => /listening on http/.test(cli.stdout()), 'serve to listen');
  const warning = cli
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; executor?: string })
    .find((r) => r.executor === 'direct');
  assert.ok(warning, cli.stdout());
  assert.equal(warning.level, 40, 'a warning');
  assert.match(warning.msg, /^runs execute without a sandbox \(--executor direct\)/);
});

test('FACTORY_EXECUTOR=direct is the same choice as the flag', async (t) => {
  const dir = tempDir(t);
  const cli = startCli(['serve', '--port', '0', '--data-dir', path.join(dir, 'data')], { cwd: dir, env: terminalEnv({ FACTORY_BWRAP: MISSING, FACTORY_EXECUTOR: 'direct' }) });
  t.after(() => stop(cli));
  await cli.waitFor(() => /listening on http/.test(cli.stdout()) && /without a sandbox/.test(cli.stdout()), 'serve to listen and warn');
});

test('dev without bubblewrap says in one line that it carries on with direct, and carries on', async (t) => {
  const dir = tempDir(t);
  writeFileSync(path.join(dir, 'factory.yaml'), 'name: laptop\n');
  const cli = startCli(['dev', dir, '--port', '0', '--data-dir', path.join(dir, 'data')], { cwd: dir, env: terminalEnv({ FACTORY_BWRAP: MISSING }) });
  t.after(() => stop(cli));
  await cli.waitFor(() => /listening on http/.test(cli.stdout()), 'dev to listen');
  assert.equal(
    cli.stderr(),
    `No sandbox for runs: bubblewrap (${MISSING}) was not found, so this dev runtime carries on with --executor direct and run commands see this machine as ${
      // As root, direct commands run as the run user, and the line says so.
      process.getuid?.() === 0 ? 'uid 65534 does (the runtime is root; that user must be able to read local repos)' : 'you do'
    }; to sandbox them, install it (apt-get install bubblewrap).\n`,
  );
  assert.doesNotMatch(cli.stdout(), /without a sandbox/, 'said once, not again by the executor');
});

test('dev --executor sandbox without bubblewrap refuses, as serve does: an explicit choice is never replaced', async (t) => {
  const dir = tempDir(t);
  writeFileSync(path.join(dir, 'factory.yaml'), 'name: laptop\n');
  const cli = startCli(['dev', dir, '--port', '0', '--data-dir', path.join(dir, 'data'), '--executor', 'sandbox'], { cwd: dir, env: terminalEnv({ FACTORY_BWRAP: MISSING }) });
  assert.equal(await cli.exited, 1);
  assert.match(cli.stderr(), /^error: runs cannot start: bubblewrap \(.*\) was not found; .*\n$/);
  assert.equal(existsSync(path.join(dir, 'data')), false, 'refused before the data dir was written');
});

test('a --sandbox-ro-bind that does not exist is named as such: serve and dev both refuse (dev never answers a typo by dropping the sandbox)', async (t) => {
  const dir = tempDir(t);
  writeFileSync(path.join(dir, 'factory.yaml'), 'name: laptop\n');
  const typo = path.join(dir, 'claude-agnet');
  const expected = `error: runs cannot start: --sandbox-ro-bind ${typo} is not a directory on this machine; correct the path or leave it out, or pass --executor direct to run commands without a sandbox, knowingly (docs/security.md#executors).\n`;
  for (const args of [['serve', '--port', '0'], ['dev', dir, '--port', '0']]) {
    const cli = startCli([...args, '--data-dir', path.join(dir, `data-${args[0]}`), '--sandbox-ro-bind', typo], { cwd: dir, env: terminalEnv() });
    assert.equal(await cli.exited, 1, `${args[0]}: ${cli.stdout()}${cli.stderr()}`);
    assert.equal(cli.stderr(), expected, args[0]);
    assert.doesNotMatch(cli.stdout(), /listening/);
    assert.equal(existsSync(path.join(dir, `data-${args[0]}`)), false, `${args[0]}: nothing written`);
  }
});
