import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stripOneNewline } from '../../../cli/commands/secret.ts';
import { assertNotAtRest, startTestRuntime } from '../../runtime/helpers.ts';
import { runCliInProcess } from '../../helpers/cli.ts';

/** Runs the CLI (in-process), with only PATH and the given variables in its environment. */
const factory = (args: string[], env: Record<string, string>, stdin?: string | Buffer) => runCliInProcess(args, { env: { PATH: process.env.PATH ?? '', ...env }, stdin });

test('stripOneNewline removes exactly one trailing newline', () => {
  assert.equal(stripOneNewline('a\n'), 'a');
  assert.equal(stripOneNewline('a\r\n'), 'a');
  assert.equal(stripOneNewline('a\n\n'), 'a\n');
  assert.equal(stripOneNewline(' a \t'), ' a \t');
  assert.equal(stripOneNewline('a\r'), 'a\r');
});

test('factory secret create/update/list/delete through the CLI; the value never leaks', async () => {
  const rt = await startTestRuntime();
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const VALUE = 'cli-canary-51d0e2 with  spaces ';
  const FILE_VALUE = 'file-canary-77ab';
  try {
    const created = await factory(['secret', 'create', 'github-signing'], env, VALUE + '\n');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /created secret github-signing \(version 1\)/);
    assert.equal(rt.store.secrets.reveal('github-signing'), VALUE, 'one trailing newline stripped, nothing else');

    const file = join(rt.dataDir, 'value.txt');
    writeFileSync(file, FILE_VALUE + '\r\n');
    const updated = await factory(['secret', 'update', 'github-signing', '--from-file', file], env);
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal(rt.store.secrets.reveal('github-signing'), FILE_VALUE);

    const pending = await factory(['secret', 'create', 'paddle', '--pending'], env);
    assert.equal(pending.code, 0, pending.stderr);
    assert.match(pending.stdout, /pending/);

    const list = await factory(['secret', 'list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const rows = JSON.parse(list.stdout) as { name: string; current_version: number; has_value: boolean }[];
    assert.deepEqual(rows.map((r) => [r.name, r.current_version, r.has_value]), [['github-signing', 2, true], ['paddle', 0, false]]);
    const table = await factory(['secret', 'list'], env);
    assert.match(table.stdout, /^NAME\s+VERSION\s+VALUE\s+FACTORIES\s+UPDATED\n/);

    const empty = await factory(['secret', 'create', 'empty'], env, '\n');
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /^error: the value is empty/);
    const dup = await factory(['secret', 'create', 'paddle'], env, 'x');
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists/);
    const usage = await factory(['secret', 'create', 'x', '--pending', '--from-file', file], env);
    assert.equal(usage.code, 2);

    const del = await factory(['secret', 'delete', 'paddle'], env);
    assert.equal(del.code, 0, del.stderr);

    const unreachable = await factory(['secret', 'list'], { ...env, FACTORY_SERVER: 'http://127.0.0.1:1' });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /cannot reach the runtime at http:\/\/127\.0\.0\.1:1/);

    const outputs = [created, updated, pending, list, table].map((r) => r.stdout + r.stderr).join('\n');
    for (const v of [VALUE.trim(), FILE_VALUE]) {
      assert.ok(!outputs.includes(v), 'not in CLI output');
      assert.ok(!rt.logs.text.includes(v), 'not in the logs');
    }
    assertNotAtRest(rt, [VALUE.trim(), FILE_VALUE]);
  } finally {
    await rt.stop();
  }
});

test('on a terminal the value comes from a hidden prompt (raw mode, backspace works, nothing echoed)', async () => {
  const rt = await startTestRuntime();
  try {
    const { PassThrough } = await import('node:stream');
    const { runCli } = await import('../../../cli/main.ts');
    const stdin = Object.assign(new PassThrough(), { rawModes: [] as boolean[], setRawMode(m: boolean) { this.rawModes.push(m); } });
    let out = '';
    let err = '';
    const io = {
      stdout: (s: string) => void (out += s),
      stderr: (s: string) => void (err += s),
      env: { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey },
      cwd: process.cwd(),
      stdin,
      stdinIsTTY: true,
      stdoutIsTTY: true,
    };
    const done = runCli(['secret', 'create', 'typed'], io);
    stdin.write('tty-secrex\u007ft\r');
    assert.equal(await done, 0, err);
    assert.equal(rt.store.secrets.reveal('typed'), 'tty-secret');
    assert.deepEqual(stdin.rawModes, [true, false]);
    assert.match(err, /value for typed \(input is hidden\): \n/);
    assert.ok(!(out + err).includes('tty-secre'));
  } finally {
    await rt.stop();
  }
});

test('the hidden prompt: Ctrl-U erases the line, Ctrl-W the last word; a control character or escape sequence is refused and nothing stored; an unknown secret is said before the prompt', async () => {
  const rt = await startTestRuntime();
  try {
    const { PassThrough } = await import('node:stream');
    const { runCli } = await import('../../../cli/main.ts');
    /** Types `keys` at the prompt of `factory secret <args>` on a terminal. */
    const typed = async (args: string[], keys: string) => {
      const stdin = Object.assign(new PassThrough(), { setRawMode() {} });
      const io = { out: '', err: '', stdout: (s: string) => void (io.out += s), stderr: (s: string) => void (io.err += s) };
      const done = runCli(args, { ...io, env: { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, cwd: process.cwd(), stdin, stdinIsTTY: true, stdoutIsTTY: true });
      stdin.write(keys);
      const code = await done;
      return { code, out: io.out, err: io.err, unread: stdin.read() as string | null };
    };

    const erased = await typed(['secret', 'create', 'line'], 'wrongtoken\u0015righttoken-1234\r');
    assert.equal(erased.code, 0, erased.err);
    assert.equal(rt.store.secrets.reveal('line'), 'righttoken-1234');
    const word = await typed(['secret', 'create', 'word'], 'one two  \u0017three four\u0017five\r');
    assert.equal(word.code, 0, word.err);
    assert.equal(rt.store.secrets.reveal('word'), 'one three five');

    const cases: [string, string][] = [
      ['left\u001b[Dx\r', 'an escape sequence (an arrow or function key)'],
      ['a\tb\r', 'the control character U+0009'],
      ['a\u001ab\r', 'the control character U+001A'],
      ['a\u009b2Jb\r', 'the control character U+009B'],
    ];
    for (const [keys, held] of cases) {
      const r = await typed(['secret', 'create', 'refused'], keys);
      assert.equal(r.code, 1, JSON.stringify(keys));
      assert.equal(r.err, `value for refused (input is hidden): \nerror: the value typed held ${held}, which the prompt does not take, so nothing was stored; type it again, or pipe it on stdin or use --from-file.\n`);
      assert.equal(r.unread, null, 'the rest of the line was read, not left for the shell');
      assert.equal(rt.store.secrets.reveal('refused'), undefined);
    }
    const unknown = await typed(['secret', 'update', 'nosuch'], 'typed-for-nothing\r');
    assert.deepEqual([unknown.code, unknown.err], [1, 'error: No secret is named "nosuch".\n'], 'said before the prompt asks for a value');
    const update = await typed(['secret', 'update', 'line'], 'new\tvalue\r');
    assert.equal(update.code, 1);
    assert.equal(rt.store.secrets.reveal('line'), 'righttoken-1234', 'an update refused leaves the value as it was');
  } finally {
    await rt.stop();
  }
});
