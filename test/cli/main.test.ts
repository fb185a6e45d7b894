import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Command } from 'commander';
import { buildProgram, runCli } from '../../cli/main.ts';
import { bufferIO } from './helpers.ts';

/** The command tree as a user meets it: order, descriptions, examples and one-line usage errors. */

function walk(cmd: Command, path: string[] = []): { path: string[]; cmd: Command }[] {
  return [{ path, cmd }, ...cmd.commands.flatMap((c) => walk(c, [...path, c.name()]))];
}

test('top-level commands come in workflow order: offline, definitions, then team and operations', () => {
  const names = buildProgram(bufferIO()).commands.map((c) => c.name());
  assert.deepEqual(names, ['validate', 'build', 'plan', 'apply', 'watch', 'dev', 'serve', 'worker', 'migrate', 'secret', 'key', 'webhook', 'delivery', 'automation', 'run', 'filter']);
});

test('every command and group has a description without spec references, and its help shows examples', async () => {
  const commands = walk(buildProgram(bufferIO()));
  assert.ok(commands.length > 30, `walked ${commands.length} commands`);
  for (const { path, cmd } of commands) {
    const where = `factory ${path.join(' ')}`.trim();
    if (path.length) assert.ok(cmd.description().length > 5, `${where} has a description`);
    assert.doesNotMatch(cmd.description(), /SPEC/, `${where}: the description names no spec section`);
    const io = bufferIO();
    assert.equal(await runCli([...path, '--help'], io), 0, `${where} --help exits 0`);
    assert.match(io.out, /^Usage: factory/, `${where} --help prints usage`);
    assert.match(io.out, /\nExamples?:\n(?:.*\n)*? {2}\$ .*factory /, `${where} --help shows an example`);
    assert.doesNotMatch(io.out, /\(SPEC [0-9]/, `${where} --help names no spec section`);
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
