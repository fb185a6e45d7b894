/**
 * `npm run bench`: every benchmark in one run, each printing its figures and the ratio to its
 * target, measured side by side on this machine. Targets are never asserted in tests (the
 * machines are shared and noisy); this script is where they are checked.
 *
 * `npm run bench -- compile runs` runs a subset; `--quick` makes the ingress and replicas benches one short round.
 */
import { benchCli } from './cli.ts';
import { benchCompile } from './compile.ts';
import { benchIngress } from './ingress.ts';
import { benchReplicas } from './replicas.ts';
import { benchRuns } from './runs.ts';
import { benchServeStart } from './serve.ts';

const BENCHES: Record<string, (print: (line: string) => void, opts: { quick: boolean }) => Promise<void>> = {
  compile: benchCompile,
  runs: (print) => benchRuns(print),
  ingress: benchIngress,
  // SQLite next to PostgreSQL with one and two replicas: ingress and run creation.
  replicas: benchReplicas,
  cli: (print) => benchCli(print),
  // Also the last part of runs; alone here to measure only it.
  serve: (print) => benchServeStart(print),
};

const print = (line: string) => void process.stdout.write(line + '\n');
const quick = process.argv.includes('--quick');
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in BENCHES));
if (unknown.length > 0) {
  process.stderr.write(`error: unknown benchmark ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}\n`);
  process.exitCode = 2;
} else {
  for (const [name, run] of Object.entries(BENCHES)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    print(`\n== ${name} ==`);
    await run(print, { quick });
  }
}
