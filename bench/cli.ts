import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildCli } from '../scripts/build.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RUNS = 11;
/** `factory --help` from the built CLI: under 0.35 s, and under 3× a bare `node -e 0` measured alongside. */
const TARGET_S = 0.35;
const TARGET_RATIO = 3;

interface Subject {
  label: string;
  args: string[];
}

/**
 * Wall time of `factory --help` (median of RUNS, subjects interleaved so that load on the machine
 * falls on all of them alike): the CLI built into a scratch directory by the same build as
 * `npm run build`, bin/factory.js when dist/ is current, the sources through tsx, and `node -e 0`.
 */
export async function benchCli(print: (line: string) => void): Promise<void> {
  mkdirSync(join(ROOT, 'tmp'), { recursive: true });
  // Inside the repo, so node_modules resolves from the build as it does from dist/.
  const outdir = mkdtempSync(join(ROOT, 'tmp', 'bench-cli-'));
  try {
    // The machine is shared: under load every start-up is slower, node -e 0 too, so the ratio to
    // node -e 0 from the same run is the figure that compares.
    print(`cli: load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} on ${availableParallelism()} cores`);
    const started = performance.now();
    const { inputs } = await buildCli(outdir);
    print(`cli: built ${inputs.length} source files in ${((performance.now() - started) / 1000).toFixed(2)} s`);
    const subjects: Subject[] = [
      { label: 'built: node dist/cli/main.js --help', args: [join(outdir, 'cli', 'main.js'), '--help'] },
      ...(distIsCurrent() ? [{ label: 'bin/factory.js --help (dist/ current)', args: [join(ROOT, 'bin', 'factory.js'), '--help'] }] : []),
      { label: 'tsx: node --import tsx cli/main.ts --help', args: ['--import', 'tsx', join(ROOT, 'cli', 'main.ts'), '--help'] },
      { label: 'node -e 0', args: ['-e', '0'] },
    ];
    const times = new Map<Subject, number[]>(subjects.map((s) => [s, []]));
    // The CLI runs only when it is the entry script or told so (cli/main.ts).
    const env = { ...process.env, FACTORY_CLI_ENTRY: '1', NO_COLOR: '1' };
    for (const s of subjects) run(s, env); // warm the disk cache and tsx's transform cache
    for (let i = 0; i < RUNS; i++) for (const s of subjects) times.get(s)!.push(run(s, env));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const width = Math.max(...subjects.map((s) => s.label.length));
    for (const s of subjects) print(`cli: ${s.label.padEnd(width)}  median of ${RUNS}: ${median(times.get(s)!).toFixed(3)} s`);
    if (!distIsCurrent()) print('cli: dist/ is absent or older than the sources, so bin/factory.js runs the sources through tsx (npm run build)');
    const builtS = median(times.get(subjects[0]!)!);
    const nodeS = median(times.get(subjects[subjects.length - 1]!)!);
    const met = builtS < TARGET_S && builtS < TARGET_RATIO * nodeS;
    print(
      `cli: target: built --help under ${TARGET_S} s and under ${TARGET_RATIO}× node -e 0 (${(TARGET_RATIO * nodeS).toFixed(3)} s here): ` +
        `${(builtS / nodeS).toFixed(1)}× node -e 0, ${met ? 'met' : 'NOT met'}`,
    );
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

function run(s: Subject, env: NodeJS.ProcessEnv): number {
  const start = performance.now();
  const r = spawnSync(process.execPath, s.args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const seconds = (performance.now() - start) / 1000;
  if (r.status !== 0) throw new Error(`${s.label} exited ${r.status}: ${r.stderr.toString()}`);
  return seconds;
}

/** What bin/factory.js decides: dist/ is used while no source it was built from changed since. */
function distIsCurrent(): boolean {
  try {
    const { startedAt, inputs } = JSON.parse(readFileSync(join(ROOT, 'dist', 'build.json'), 'utf8')) as { startedAt: number; inputs: string[] };
    return inputs.length > 0 && inputs.every((file) => statSync(join(ROOT, file)).mtimeMs < startedAt);
  } catch {
    return false;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchCli((line) => console.log(line));
