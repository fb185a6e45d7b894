/**
 * `npm run build`: the CLI as plain JavaScript in dist/, so `bin/factory.js` starts without
 * compiling TypeScript on every run (README.md#commands). One esbuild bundle of cli/main.ts with
 * code splitting: every `await import()` of a command's action becomes its own chunk, loaded only
 * when that command runs. npm packages are bundled too, but for the native ones (and the test
 * browser's driver), which stay in node_modules: resolving packages and scanning their CommonJS
 * modules at start cost about 80 ms of a runtime's start (docs/architecture.md).
 *
 * `npm run build -- --outdir DIR` builds elsewhere (the tests build into a temporary directory
 * inside the repo, so node_modules still resolves from it).
 *
 * dist/build.json records when the build started and every source file it read; bin/factory.js
 * uses dist/ only while none of them has changed since, and the sources through tsx otherwise.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { build, type Plugin } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..');

export interface BuildResult {
  outdir: string;
  /** Source files bundled, relative to the repo root. */
  inputs: string[];
}

export async function buildCli(outdir: string = join(ROOT, 'dist')): Promise<BuildResult> {
  const startedAt = Date.now();
  const chunkDir = join(outdir, 'cli');
  await rm(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { main: join(ROOT, 'cli', 'main.ts') },
    outdir: chunkDir,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['better-sqlite3', 'pg-native', 'playwright-core', 'fsevents'],
    // A bundled CommonJS module's `require` (of a Node module, or of a package left outside) is
    // Node's own, made for the chunk: an ES module has none.
    banner: { js: "import { createRequire as __factoryCreateRequire } from 'node:module'; const require = __factoryCreateRequire(import.meta.url);" },
    metafile: true,
    logLevel: 'silent',
    plugins: [sourceUrls(chunkDir)],
  });
  const inputs = Object.keys(result.metafile.inputs)
    .map((p) => relative(ROOT, resolve(ROOT, p)).split(sep).join('/'))
    .sort();
  await writeFile(join(outdir, 'build.json'), JSON.stringify({ startedAt, inputs }, null, 2) + '\n');
  return { outdir, inputs };
}

/**
 * Files next to a module (migrations, the dashboard, the sandbox's git config, package.json) are
 * found through `new URL(path, import.meta.url)` or `fileURLToPath(import.meta.url)`. In a bundle
 * that is the chunk's URL, so there `import.meta.url` is replaced by the module's source file URL,
 * computed from the chunk's location (dist/ may move with the repo, never away from it). Any other
 * use (cli/main.ts asking whether it is the script being run) keeps the chunk's own URL.
 */
function sourceUrls(chunkDir: string): Plugin {
  return {
    name: 'source-urls',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const text = await readFile(args.path, 'utf8');
        if (/import\.meta\.(dirname|filename)\b/.test(text)) {
          const file = relative(ROOT, args.path);
          return { errors: [{ text: `${file}: use import.meta.url, which the build maps back to the source file (import.meta.dirname and filename are not mapped)` }] };
        }
        if (!text.includes('import.meta.url')) return undefined;
        const rel = relative(chunkDir, args.path).split(sep).join('/');
        const url = `new URL(${JSON.stringify(rel)}, import.meta.url).href`;
        const contents = text.replace(/(,\s*|fileURLToPath\(\s*)import\.meta\.url\b/g, (_, before: string) => before + url);
        return { contents, loader: 'ts' };
      });
    },
  };
}

const invoked = process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(ROOT, 'scripts', 'build.ts');
if (invoked) {
  const i = process.argv.indexOf('--outdir');
  const given = i >= 0 ? process.argv[i + 1] : undefined;
  const outdir = given ? (isAbsolute(given) ? given : resolve(given)) : undefined;
  try {
    const { outdir: out, inputs } = await buildCli(outdir);
    process.stdout.write(`built ${relative(process.cwd(), out) || '.'}/cli/main.js from ${inputs.length} source files\n`);
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { file: string; line: number; column: number } | null }[] }).errors;
    if (errors?.length) {
      for (const e of errors) process.stderr.write(`error: ${e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ` : ''}${e.text}\n`);
    } else {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exitCode = 1;
  }
}
