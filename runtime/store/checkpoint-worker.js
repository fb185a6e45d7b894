// The SQLite checkpointer's thread (runtime/store/checkpointer.ts, docs/runtime.md#checkpoints): a
// connection of its own to the runtime's database file that copies committed WAL frames back into
// the database when the main thread asks, so the event loop never spends its time on that copy.
// Plain JavaScript so that it loads both under tsx and next to the esbuild bundle in dist/.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { path } = /** @type {{ path: string }} */ (workerData);
const db = new Database(path, { fileMustExist: true });
// A checkpoint syncs the WAL before copying and the database file before the WAL may be reused,
// as the main connection's own checkpoints would (synchronous is per connection).
db.pragma('synchronous = FULL');
// PASSIVE: copies what no reader still needs, never waits for a lock, never blocks the writer.
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

parentPort?.on('message', (/** @type {'checkpoint' | 'stop'} */ message) => {
  if (message === 'stop') {
    db.close();
    parentPort?.close();
    return;
  }
  try {
    const row = /** @type {{ busy: number, log: number, checkpointed: number }} */ (passive.get());
    parentPort?.postMessage({ busy: row.busy, log: row.log, checkpointed: row.checkpointed });
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
});
