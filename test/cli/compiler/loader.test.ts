import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../../core/errors.ts';
import { compile, loadRepo } from '../../../cli/compiler/index.ts';

async function repo(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'factory-loader-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

async function rejects(dir: string, message: RegExp, given = dir) {
  await assert.rejects(loadRepo(given), (err: unknown) => err instanceof CliError && err.exitCode === 1 && message.test(err.message));
}

test('reads definitions only: dotfiles, deeper trees and unrelated files are skipped', async (t) => {
  const dir = await repo({
    'factory.yaml': 'name: x\n',
    'README.md': '# hi\n',
    'webhooks/a.yaml': 'secretName: s\n',
    'webhooks/.hidden.yaml': 'junk: [\n',
    'webhooks/notes.txt': '\xff',
    'automations/b/automation.md': '---\n---\n',
    'automations/b/data.bin': Buffer.from([0xff, 0xfe]),
    'environments/e.yaml': 'agent: {command: [a]}\n',
  });
  t.after(() => rm(dir, { recursive: true, force: true }));
  const files = await loadRepo(dir);
  assert.deepEqual(files.map((f) => f.path), ['automations/b/automation.md', 'environments/e.yaml', 'factory.yaml', 'webhooks/a.yaml', 'webhooks/notes.txt']);
  assert.equal(files.find((f) => f.path === 'webhooks/notes.txt')!.text, '');
});

test('each bad input is one clear CliError', async (t) => {
  const big = 'secretName: x\n' + 'a'.repeat(5 * 1024 * 1024) + '\n';
  const dirs = {
    missing: join(tmpdir(), 'factory-does-not-exist-' + process.pid),
    noFactory: await repo({ 'webhooks/a.yaml': 'secretName: s\n' }),
    utf8: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/a.yaml': Buffer.from([0x61, 0x3a, 0x20, 0xc3, 0x28, 0x0a]) }),
    big: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/big.yaml': big }),
    dirAsFile: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/a.yaml/x': 'y' }),
    dangling: await repo({ 'factory.yaml': 'name: x\n' }),
  };
  await mkdir(join(dirs.dangling, 'webhooks'));
  await symlink(join(dirs.dangling, 'nowhere.yaml'), join(dirs.dangling, 'webhooks', 'a.yaml'));
  t.after(() => Promise.all(Object.values(dirs).map((d) => rm(d, { recursive: true, force: true }))));
  await rejects(dirs.missing, /does not exist/);
  await rejects(dirs.noFactory, /has no factory\.yaml/);
  await rejects(dirs.utf8, /webhooks\/a\.yaml is not valid UTF-8 \(at byte offset 3\)/);
  await rejects(dirs.big, /webhooks\/big\.yaml is \d+ bytes; definitions files may be at most 1048576 bytes/);
  await rejects(dirs.dirAsFile, /cannot read webhooks\/a\.yaml: it is a directory/);
  await rejects(dirs.dangling, /cannot read webhooks\/a\.yaml: it is a symbolic link/);
});

test('an automation folder without its automation.md, and a folder too deep to be read, are named, never silently skipped', async (t) => {
  const dir = await repo({
    'factory.yaml': 'name: x\n',
    'automations/typo/Automation.md': '---\n---\n',
    'automations/fine/automation.md': '---\n---\n',
    'automations/fine/examples/payload.json': '{}',
    'environments/sub/deeper/e.yaml': 'agent: {command: [a]}\n',
  });
  t.after(() => rm(dir, { recursive: true, force: true }));
  const files = await loadRepo(dir);
  assert.deepEqual(files.map((f) => f.path), ['automations/fine/automation.md', 'automations/typo/', 'environments/sub/deeper/', 'factory.yaml']);
  const { diagnostics } = compile(files);
  assert.deepEqual(
    diagnostics.filter((d) => d.code === 'file.unexpected').map((d) => [d.file, d.severity, d.message]),
    [
      ['automations/typo/', 'warning', "not read: this folder holds no automation.md (lowercase), so it defines no automation; an apply would delete automation 'typo' if it exists"],
      ['environments/sub/deeper/', 'warning', 'not read: environments/ holds <name>.yaml files, not subdirectories'],
    ],
  );
});

test('a Warp definition folder without its file (a typo, an empty folder) is named, never silently skipped', async (t) => {
  const dir = await repo({
    'factory.yaml': 'name: x\n',
    'agents/good/agent.md': '---\ndescription: d\n---\nbody\n',
    'agents/good/skills/sk/SKILL.md': '---\nname: sk\ndescription: d\n---\nbody\n',
    'agents/good/skills/typo/skill.md': '---\n---\n',
    'agents/typo/Agent.md': '---\n---\n',
    'skills/s1/skill.md': '---\n---\n',
    'scorers/sc/Scorer.md': 'x\n',
    'benchmarks/b/suite.yml': 'x: 1\n',
  });
  await mkdir(join(dir, 'agents', 'empty'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { diagnostics } = compile(await loadRepo(dir));
  assert.deepEqual(
    diagnostics.filter((d) => d.code === 'file.unexpected').map((d) => [d.file, d.message]),
    [
      ['agents/empty/', 'not read: this folder holds no agent.md (exactly so named), so it defines nothing'],
      ['agents/good/skills/typo/', 'not read: this folder holds no SKILL.md (exactly so named), so it defines nothing'],
      ['agents/typo/', 'not read: this folder holds no agent.md (exactly so named), so it defines nothing'],
      ['benchmarks/b/', 'not read: this folder holds no suite.yaml (exactly so named), so it defines nothing'],
      ['scorers/sc/', 'not read: this folder holds no scorer.md (exactly so named), so it defines nothing'],
      ['skills/s1/', 'not read: this folder holds no SKILL.md (exactly so named), so it defines nothing'],
    ],
  );
  assert.ok(diagnostics.every((d) => d.file !== 'agents/good/' && d.file !== 'agents/good/skills/sk/'));
});
