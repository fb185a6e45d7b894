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

test('a repo that cannot be read is one clear CliError; a file that cannot be read is a diagnostic with its code', async (t) => {
  const big = 'secretName: x\n' + 'a'.repeat(5 * 1024 * 1024) + '\n';
  const dirs = {
    missing: join(tmpdir(), 'factory-does-not-exist-' + process.pid),
    noFactory: await repo({ 'webhooks/a.yaml': 'secretName: s\n' }),
    utf8: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/a.yaml': Buffer.from([0x61, 0x3a, 0x20, 0xc3, 0x28, 0x0a]) }),
    utf8Line: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/a.yaml': Buffer.concat([Buffer.from('\ufeffsecretName: s\ndescription: caf\u00e9 '), Buffer.from([0xff, 0x0a])]) }),
    big: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/big.yaml': big }),
    dirAsFile: await repo({ 'factory.yaml': 'name: x\n', 'webhooks/a.yaml/x': 'y' }),
    dangling: await repo({ 'factory.yaml': 'name: x\n' }),
  };
  await mkdir(join(dirs.dangling, 'webhooks'));
  await symlink(join(dirs.dangling, 'nowhere.yaml'), join(dirs.dangling, 'webhooks', 'a.yaml'));
  t.after(() => Promise.all(Object.values(dirs).map((d) => rm(d, { recursive: true, force: true }))));
  await rejects(dirs.missing, /does not exist/);
  await rejects(dirs.noFactory, /has no factory\.yaml/);
  const problems = async (dir: string) => compile(await loadRepo(dir)).diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.severity} ${d.code}: ${d.message}`);
  assert.deepEqual(await problems(dirs.utf8), ['webhooks/a.yaml:1:4 error file.invalid_encoding: webhooks/a.yaml is not valid UTF-8 (at byte offset 3); save it as UTF-8']);
  // The line and column of the bad byte: a BOM takes no column, é is one.
  assert.deepEqual(await problems(dirs.utf8Line), ['webhooks/a.yaml:2:19 error file.invalid_encoding: webhooks/a.yaml is not valid UTF-8 (at byte offset 36); save it as UTF-8']);
  assert.deepEqual(await problems(dirs.big), ['webhooks/big.yaml:1:1 error file.too_large: webhooks/big.yaml is 5242895 bytes; definitions files may be at most 1048576 bytes (1 MiB)']);
  assert.deepEqual(await problems(dirs.dirAsFile), ['webhooks/a.yaml:1:1 error file.not_a_file: cannot read webhooks/a.yaml: it is a directory, but a file is expected there']);
  assert.deepEqual(await problems(dirs.dangling), ['webhooks/a.yaml:1:1 error file.unreadable: cannot read webhooks/a.yaml: it is a symbolic link to a file that does not exist']);
});

test('a file that cannot be read hides no other problem, and still names what it defines', async (t) => {
  const dir = await repo({
    'factory.yaml': Buffer.from([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0xff, 0x0a]),
    'environments/sandbox.yaml': Buffer.from([0x61, 0x67, 0x65, 0x6e, 0x74, 0x3a, 0xfe, 0x0a]),
    'automations/a.md': '---\nenvironment: sandbox\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule: {cron: "0 0 * * *"}\nbad: 1\n---\nDo it.\n',
    'webhooks/b.yaml': 'secretname: s\n',
  });
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { diagnostics, snapshot } = compile(await loadRepo(dir));
  assert.equal(snapshot, undefined);
  assert.deepEqual(diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code}`), [
    'automations/a.md:7:1 automation.unknown_key',
    'environments/sandbox.yaml:1:7 file.invalid_encoding',
    'factory.yaml:1:7 file.invalid_encoding',
    'webhooks/b.yaml:1:1 webhook.missing_key',
    'webhooks/b.yaml:1:1 webhook.unknown_key',
  ]);
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
