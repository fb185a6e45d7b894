import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { dealGroups } from '../../scripts/test.ts';

/** `npm test`'s runner (docs/architecture.md#how-the-suite-runs). */

const ROOT = resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);
/** The runner as a child, without this process's NODE_TEST_CONTEXT (which would make its node --test report to us instead of printing TAP). */
const { NODE_TEST_CONTEXT: _, ...env } = process.env;
const SCRIPT = join(ROOT, 'scripts/test.ts');
const runner = (args: string[]) => exec(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { cwd: ROOT, env });

test('dealGroups puts every file in exactly one group, biggest groups first, balanced within the biggest file', () => {
  const files = Array.from({ length: 37 }, (_, i) => ({ file: `test/f${String(i).padStart(2, '0')}.test.ts`, size: ((i * 7919) % 97) * 100 + 50 }));
  const groups = dealGroups(files, 5);
  assert.equal(groups.length, 5);
  assert.deepEqual(groups.flat().sort(), files.map((f) => f.file).sort(), 'each file once');
  const sizeOf = new Map(files.map((f) => [f.file, f.size]));
  const totals = groups.map((g) => g.reduce((n, f) => n + sizeOf.get(f)!, 0));
  assert.deepEqual(totals, [...totals].sort((a, b) => b - a), 'biggest group first');
  assert.ok(totals[0]! - totals.at(-1)! <= Math.max(...files.map((f) => f.size)), `totals ${totals.join(', ')}`);
  for (const g of groups) assert.deepEqual(g, [...g].sort(), 'files in sorted order within a group');
  assert.equal(dealGroups(files.slice(0, 2), 5).length, 2, 'never an empty group');
});

/** Three test files that write their process id into `dir`; the third fails when `fail` is set. */
function writeFiles(dir: string, fail: boolean): string[] {
  return ['a', 'b', 'c'].map((name) => {
    const file = join(dir, `${name}.test.ts`);
    const failing = fail && name === 'c' ? `assert.equal(1, 2, 'c fails');` : '';
    writeFileSync(
      file,
      `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { writeFileSync } from 'node:fs';\n` +
        `test('${name}', () => { writeFileSync(${JSON.stringify(join(dir, `${name}.pid`))}, String(process.pid)); ${failing} });\n`,
    );
    return file;
  });
}

const pids = (dir: string) => ['a', 'b', 'c'].map((n) => readFileSync(join(dir, `${n}.pid`), 'utf8'));

test('grouped, the files share one process; --solo gives each its own; a failing file fails the run with exit code 1', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-runner-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const files = writeFiles(dir, false);

  const grouped = await runner(['--groups', '1', ...files]);
  assert.match(grouped.stderr, /# group-01\.test\.mjs: .*a\.test\.ts .*b\.test\.ts .*c\.test\.ts/);
  assert.match(grouped.stdout, /# pass 3/);
  assert.equal(new Set(pids(dir)).size, 1, 'one process for the three files');

  await runner(['--solo', ...files]);
  assert.equal(new Set(pids(dir)).size, 3, 'a process per file');

  writeFiles(dir, true);
  const failed = await runner(['--groups', '2', ...files]).then(
    () => assert.fail('a failing test must fail the run'),
    (err: { code: number; stdout: string }) => err,
  );
  assert.equal(failed.code, 1);
  assert.match(failed.stdout, /# fail 1/);
  assert.match(failed.stdout, /c fails/);
});

test('a file that does not exist or an unknown option is a one-sentence error with exit code 1', async () => {
  for (const [args, message] of [
    [['test/no-such.test.ts'], /^No test file or directory test\/no-such\.test\.ts\.\n$/],
    [['--fast'], /^Unknown option --fast: /],
    [['--groups', 'x'], /^--groups takes a whole number of at least 1, not x\.\n$/],
  ] as const) {
    const err = await runner([...args]).then(
      () => assert.fail(`${args.join(' ')} must fail`),
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal(err.code, 1, args.join(' '));
    assert.match(err.stderr, message);
  }
});
