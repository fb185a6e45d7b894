// The database's integrity check at start (runtime/store/storage-health.ts, docs/runtime.md#when-storage-fails):
// `PRAGMA quick_check` on a read-only connection of its own, in a thread, so that the runtime
// serves meanwhile. Posts `{problems, ms}` (no problems: the database is sound), or `{error, code}`
// when the check itself failed (SQLITE_CORRUPT or SQLITE_NOTADB say the file is damaged too).
// Plain JavaScript so that it loads both under tsx and next to the esbuild bundle in dist/.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { path } = /** @type {{ path: string }} */ (workerData);
/** At most this many problems are reported: the first says what the rest would. */
const MOST = 5;
let db;
try {
  const started = performance.now();
  db = new Database(path, { readonly: true, fileMustExist: true });
  const rows = /** @type {{ quick_check: string }[]} */ (db.pragma(`quick_check(${MOST})`));
  const problems = rows
    .flatMap((r) => String(r.quick_check).split('\n'))
    .filter((line) => line !== 'ok' && line !== '' && !line.startsWith('*** in database'))
    .slice(0, MOST);
  parentPort?.postMessage({ problems, ms: Math.round(performance.now() - started) });
} catch (err) {
  const e = /** @type {{ message?: unknown, code?: unknown }} */ (err ?? {});
  parentPort?.postMessage({ error: String(e.message ?? err), code: typeof e.code === 'string' ? e.code : undefined });
} finally {
  db?.close();
}
