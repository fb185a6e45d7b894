import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { buildCli } from '../../scripts/build.ts';
import * as source from '../../cli/main.ts';
import { bufferIO } from '../cli/helpers.ts';
import { execCli, startCli, terminalEnv } from '../helpers/cli.ts';

/**
 * `npm run build` (README.md#commands): the built CLI must behave as the sources do. Built into a
 * directory of the repo's tmp/ (so node_modules resolves from it), never into dist/, which may be
 * stale or in use.
 */

const ROOT = resolve(import.meta.dirname, '../..');
mkdirSync(join(ROOT, 'tmp'), { recursive: true });
const outdir = mkdtempSync(join(ROOT, 'tmp', 'build-test-'));
test.after(() => rmSync(outdir, { recursive: true, force: true }));

const built = buildCli(outdir);
built.catch(() => {}); // each test awaits it and fails with its error
const builtMain = join(outdir, 'cli', 'main.js');

function walk(cmd: Command, path: string[] = []): string[][] {
  return [path, ...cmd.commands.flatMap((c) => walk(c, [...path, c.name()]))];
}

test('the built CLI prints the same help as the sources, for every command and subcommand', async () => {
  await built;
  const dist = (await import(pathToFileURL(builtMain).href)) as typeof source;
  const paths = walk(source.buildProgram(bufferIO()));
  assert.ok(paths.length > 30, `walked ${paths.length} commands`);
  assert.deepEqual(walk(dist.buildProgram(bufferIO())), paths, 'the same command tree');
  for (const args of [...paths.map((p) => [...p, '--help']), ['--version']]) {
    const a = bufferIO();
    const b = bufferIO();
    const codes = [await source.runCli(args, a), await dist.runCli(args, b)];
    assert.deepEqual(codes, [0, 0], `factory ${args.join(' ')}`);
    assert.equal(b.out, a.out, `factory ${args.join(' ')}: stdout`);
    assert.equal(b.err, a.err, `factory ${args.join(' ')}: stderr`);
  }
});

test('as a child process, the built CLI and the tsx CLI print the same top-level help', async () => {
  await built;
  const run = (entry: string[]) => execCli(['--help'], { env: terminalEnv({ FACTORY_CLI_ENTRY: '1' }), entry });
  const fromBuild = await run([builtMain]);
  const fromSource = await run(['--import', 'tsx', join(ROOT, 'cli', 'main.ts')]);
  assert.equal(fromBuild.code, 0, fromBuild.stderr);
  assert.equal(fromSource.code, 0, fromSource.stderr);
  assert.match(fromBuild.stdout, /^Usage: factory /);
  assert.equal(fromBuild.stdout, fromSource.stdout);
});

/**
 * The npm packages a chunk loads when it is loaded, following its static imports of other chunks:
 * those it imports (native ones stay outside the bundle) and those bundled into it, which esbuild
 * marks with a `// node_modules/<package>/...` comment before each of their modules.
 */
function staticPackages(file: string, seen = new Set<string>()): Set<string> {
  const packages = new Set<string>();
  if (seen.has(file)) return packages;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"|^import\s*"([^"]+)"/gm)) {
    const spec = (m[1] ?? m[2])!;
    if (spec.startsWith('.')) for (const p of staticPackages(join(dirname(file), spec), seen)) packages.add(p);
    else packages.add(spec);
  }
  for (const m of text.matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) packages.add(m[1]);
  return packages;
}

test('starting the built CLI loads only commander: the runtime, the compiler and the watcher wait for their commands', async () => {
  await built;
  const loaded = [...staticPackages(builtMain)].filter((p) => !p.startsWith('node:'));
  assert.deepEqual(loaded, ['commander']);
});

test('every file the built chunks find next to a source module exists (migrations, dashboard, sandbox git config, package.json)', async () => {
  await built;
  const chunkDir = join(outdir, 'cli');
  const found: string[] = [];
  for (const name of readdirSync(chunkDir)) {
    const text = readFileSync(join(chunkDir, name), 'utf8');
    for (const m of text.matchAll(/new URL\("([^"]+\.ts)", import\.meta\.url\)/g)) {
      const file = resolve(chunkDir, m[1]!);
      assert.ok(existsSync(file), `${name} points at ${file}`);
      found.push(file.slice(ROOT.length + 1));
    }
  }
  for (const file of ['cli/main.ts', 'runtime/store/db.ts', 'runtime/routes/dashboard.ts', 'runtime/executor/sandbox.ts']) {
    assert.ok(found.includes(file), `a chunk resolves files next to ${file}`);
  }
});

test('the built serve applies its migrations and serves the dashboard', async () => {
  await built;
  const data = mkdtempSync(join(outdir, 'data-'));
  const serving = startCli(['serve', '--port', '0', '--data-dir', data, '--executor', 'direct', '--log-level', 'silent'], {
    env: terminalEnv({ FACTORY_CLI_ENTRY: '1' }),
    entry: [builtMain],
  });
  const { child, exited } = serving;
  const listening = () => /listening on (http:\/\/\S+)/.exec(serving.stdout());
  try {
    await serving.waitFor(() => listening() !== null, 'serve to listen');
    const url = listening()![1]!;
    const page = await fetch(url + '/');
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<title>factory dashboard<\/title>/);
    const key = readFileSync(join(data, 'admin.key'), 'utf8').trim();
    const list = await fetch(url + '/api/v1/webhooks', { headers: { authorization: `Bearer ${key}` } });
    assert.equal(list.status, 200, 'the database was migrated');
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, serving.stderr());
  }
});

test('bin/factory.js runs dist/ only while no source it was built from has changed since', async () => {
  // A copy of the launcher in a scratch repo: stub sources and a stub build that say which ran.
  const repo = mkdtempSync(join(outdir, 'repo-'));
  mkdirSync(join(repo, 'bin'));
  mkdirSync(join(repo, 'cli'));
  mkdirSync(join(repo, 'dist', 'cli'), { recursive: true });
  copyFileSync(join(ROOT, 'bin', 'factory.js'), join(repo, 'bin', 'factory.js'));
  writeFileSync(join(repo, 'cli', 'main.ts'), "process.stdout.write('source ' + (process.env.FACTORY_CLI_ENTRY ?? '') + '\\n');\n");
  writeFileSync(join(repo, 'dist', 'cli', 'main.js'), "process.stdout.write('built ' + (process.env.FACTORY_CLI_ENTRY ?? '') + '\\n');\n");
  const run = async () => (await execCli([], { cwd: repo, entry: [join(repo, 'bin', 'factory.js')] })).stdout;

  assert.equal(await run(), 'source 1\n', 'no build.json: the sources');
  const startedAt = Date.now();
  writeFileSync(join(repo, 'dist', 'build.json'), JSON.stringify({ startedAt, inputs: ['cli/main.ts'] }));
  const before = new Date(startedAt - 60_000);
  utimesSync(join(repo, 'cli', 'main.ts'), before, before);
  assert.equal(await run(), 'built 1\n', 'every input older than the build: dist/');
  const after = new Date(startedAt + 60_000);
  utimesSync(join(repo, 'cli', 'main.ts'), after, after);
  assert.equal(await run(), 'source 1\n', 'an input changed after the build: the sources');
  writeFileSync(join(repo, 'dist', 'build.json'), JSON.stringify({ startedAt, inputs: ['cli/main.ts', 'cli/gone.ts'] }));
  utimesSync(join(repo, 'cli', 'main.ts'), before, before);
  assert.equal(await run(), 'source 1\n', 'an input removed since the build: the sources');
});
