import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram, runCli } from '../../cli/main.ts';
import { bufferIO } from './helpers.ts';
import { runCliInProcess } from '../helpers/cli.ts';

/** The command tree as a user meets it: order, descriptions, examples and one-line usage errors. */

function walk(cmd: Command, path: string[] = []): { path: string[]; cmd: Command }[] {
  return [{ path, cmd }, ...cmd.commands.flatMap((c) => walk(c, [...path, c.name()]))];
}

test('top-level commands come in workflow order: offline, definitions, then team and operations', () => {
  const names = buildProgram(bufferIO()).commands.map((c) => c.name());
  assert.deepEqual(names, ['validate', 'build', 'plan', 'apply', 'watch', 'dev', 'serve', 'worker', 'migrate', 'secret', 'key', 'webhook', 'delivery', 'automation', 'run', 'filter']);
});

/** The product contract's name as a word in capitals (built from pieces, so this file does not cite it). */
const CONTRACT_CITED = new RegExp(`\\b${'SP' + 'EC'}\\b`);

test('every command and group has a description without spec references, and its help shows examples', async () => {
  const commands = walk(buildProgram(bufferIO()));
  assert.ok(commands.length > 30, `walked ${commands.length} commands`);
  for (const { path, cmd } of commands) {
    const where = `factory ${path.join(' ')}`.trim();
    if (path.length) assert.ok(cmd.description().length > 5, `${where} has a description`);
    assert.doesNotMatch(cmd.description(), CONTRACT_CITED, `${where}: the description names no section of the product contract`);
    const io = bufferIO();
    assert.equal(await runCli([...path, '--help'], io), 0, `${where} --help exits 0`);
    assert.match(io.out, /^Usage: factory/, `${where} --help prints usage`);
    assert.match(io.out, /\nExamples?:\n(?:.*\n)*? {2}\$ .*factory /, `${where} --help shows an example`);
    assert.doesNotMatch(io.out, CONTRACT_CITED, `${where} --help names no section of the product contract`);
    assert.doesNotMatch(io.out, /\(default: \[\]\)/, `${where} --help shows no empty list as a default`);
  }
});

test('a usage error is one line naming the help to read, with exit code 2', async () => {
  const cases: [string[], RegExp][] = [
    [['bogus'], /^error: unknown command 'bogus'; run `factory --help` for usage\.\n$/],
    [['valdate'], /^error: unknown command 'valdate' \(did you mean validate\?\); run `factory --help` for usage\.\n$/],
    [['plan', '--bogus'], /^error: unknown option '--bogus'; run `factory plan --help` for usage\.\n$/],
    [['run', 'create'], /^error: required option '--prompt <text>' not specified; run `factory run create --help` for usage\.\n$/],
    [['delivery', 'show', 'github'], /^error: missing required argument 'delivery-id'; run `factory delivery show --help` for usage\.\n$/],
  ];
  for (const [args, expected] of cases) {
    const io = bufferIO();
    assert.equal(await runCli(args, io), 2, args.join(' '));
    assert.match(io.err, expected);
    assert.equal(io.out, '');
  }
});

test('file system errors are told in words, not errno codes', async () => {
  const io = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: 'http://127.0.0.1:9' });
  assert.equal(await runCli(['apply', '--plan', '/nonexistent/plan.json'], io), 1);
  assert.equal(io.err, 'error: cannot read the plan /nonexistent/plan.json: no such file or directory.\n');
  const dir = bufferIO();
  assert.equal(await runCli(['filter', 'test', 'test', 'test'], dir), 1);
  assert.match(dir.err, /^error: cannot read the filter file test: it is a directory\n$/);
});

test('commands run at once in one process each see only their own working directory and environment (cli/io.ts)', async () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-main-io-'));
  try {
    const repo = (name: string, webhook: string) => {
      mkdirSync(join(root, name, 'webhooks'), { recursive: true });
      writeFileSync(join(root, name, 'factory.yaml'), `name: ${name}\n`);
      writeFileSync(join(root, name, 'webhooks', 'hook.yaml'), webhook);
    };
    repo('clean', 'secretName: s\n');
    repo('broken', 'authMode: nope\n');
    const clean = { cwd: join(root, 'clean'), env: {} };
    const broken = { cwd: join(root, 'broken'), env: { GITHUB_ACTIONS: 'true' } };
    // Interleaved: each `validate .` reads its own cwd and env while the others are in flight.
    const results = await Promise.all([clean, broken, clean, broken, clean, broken].map((o) => runCliInProcess(['validate', '.'], o)));
    for (const [i, r] of results.entries()) {
      if (i % 2 === 0) {
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /^\.: no problems found/m);
      } else {
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(r.stdout, /^::error file=webhooks\/hook\.yaml,line=1,/m, 'GITHUB_ACTIONS of its own env: annotations');
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('help asked for is exit 0; help shown because a command is missing is a usage error, exit 2', async () => {
  for (const [args, code] of [[['--help'], 0], [['help'], 0], [['help', 'run'], 0], [['run', '--help'], 0], [[], 2], [['run'], 2], [['webhook'], 2], [['help', 'bogus'], 2]] as const) {
    const io = bufferIO();
    assert.equal(await runCli([...args], io), code, `factory ${args.join(' ')}`);
    assert.match(io.out + io.err, /Usage: factory/, `factory ${args.join(' ')} shows the usage`);
  }
});
