/**
 * `npm test`: runs the test files through node's test runner (`node --import tsx --test`), several
 * files to a process (docs/architecture.md#how-the-suite-runs).
 *
 * Starting node, tsx and the runtime's modules costs about a second of CPU per process, and most
 * test files run for less than that, so one process per file spent about half the suite's CPU on
 * start-up. Here the files are dealt into groups (biggest file first, each to the group with the
 * least source so far, a rough balance of their run time); each group is one entry module that
 * imports its files in order, and the runner runs the groups two at a time, the biggest first.
 *
 * Usage: `node --import tsx scripts/test.ts [--solo] [--groups N] [file...]`
 * - files: the test files or directories to run (default: every `test/**\/*.test.ts`);
 * - `--solo`: one process per file, as `node --test` does (to tell which file breaks another);
 * - `--groups N`: how many groups (default: one per 8 files).
 * `FACTORY_TEST_SOLO=1` is the same as `--solo`.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const FILES_PER_GROUP = 8;

/** Every `*.test.ts` under `dir`, sorted, relative to the repo root. */
function findTests(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => path.relative(root, path.join(dir, name)))
    .sort();
}

interface Options {
  solo: boolean;
  groups?: number;
  files: string[];
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { solo: process.env.FACTORY_TEST_SOLO === '1', files: [] };
  let named = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--solo') opts.solo = true;
    else if (arg === '--groups') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1) {
        console.error(`--groups takes a whole number of at least 1, not ${argv[i] ?? 'nothing'}.`);
        process.exit(1);
      }
      opts.groups = n;
    } else if (arg.startsWith('--')) {
      console.error(`Unknown option ${arg}: scripts/test.ts takes --solo, --groups N and test files or directories.`);
      process.exit(1);
    } else {
      named = true;
      const abs = path.resolve(arg);
      let isDir: boolean;
      try {
        isDir = statSync(abs).isDirectory();
      } catch {
        console.error(`No test file or directory ${arg}.`);
        process.exit(1);
      }
      if (isDir) opts.files.push(...findTests(abs));
      else opts.files.push(path.relative(root, abs));
    }
  }
  if (!named) opts.files = findTests(path.join(root, 'test'));
  return opts;
}

/**
 * Deals `files` into `n` groups: biggest file first, each to the group with the fewest bytes so
 * far; within a group the files keep their sorted order. Groups come back biggest first, so the
 * longest start first and the last ones to finish are short.
 */
export function dealGroups(files: { file: string; size: number }[], n: number): string[][] {
  const groups = Array.from({ length: Math.min(n, files.length) }, () => ({ size: 0, files: [] as string[] }));
  for (const f of [...files].sort((a, b) => b.size - a.size || a.file.localeCompare(b.file))) {
    const least = groups.reduce((min, g) => (g.size < min.size ? g : min));
    least.size += f.size;
    least.files.push(f.file);
  }
  return groups
    .sort((a, b) => b.size - a.size)
    .map((g) => g.files.sort());
}

function main(): void {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.files.length === 0) {
    console.error('No test files to run.');
    process.exit(1);
  }
  // Under c8 (`npm run coverage`), NODE_V8_COVERAGE is c8's scratch directory, which c8 made
  // before starting us: runs executed as another user (uid 65534) write their coverage there too.
  if (process.env.NODE_V8_COVERAGE) chmodSync(process.env.NODE_V8_COVERAGE, 0o1777);
  let entries: string[];
  let scratch: string | undefined;
  if (opts.solo) {
    entries = opts.files;
  } else {
    const n = opts.groups ?? Math.ceil(opts.files.length / FILES_PER_GROUP);
    const groups = dealGroups(
      opts.files.map((file) => ({ file, size: statSync(path.join(root, file)).size })),
      n,
    );
    scratch = mkdtempSync(path.join(tmpdir(), 'factory-test-groups-'));
    entries = groups.map((files, i) => {
      const entry = path.join(scratch!, `group-${String(i + 1).padStart(2, '0')}.test.mjs`);
      const lines = files.map((f) => `await import(${JSON.stringify(pathToFileURL(path.join(root, f)).href)});`);
      writeFileSync(entry, `// ${files.length} test files in one process (scripts/test.ts)\n${lines.join('\n')}\n`);
      console.error(`# ${path.basename(entry)}: ${files.join(' ')}`);
      return entry;
    });
  }
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...entries], {
    cwd: root,
    stdio: 'inherit',
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  child.on('exit', (code) => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    process.exitCode = code ?? 1; // null only when a signal ended it
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) main();
