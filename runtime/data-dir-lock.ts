import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CliError } from '../core/errors.ts';
import { fsReason } from '../core/fs-reason.ts';
import { tightenMode } from '../core/file-mode.ts';
import { readRuntimeFile } from './runtime-file.ts';
import { unwritableReason } from './store/storage-health.ts';

/**
 * One runtime per data dir (docs/runtime.md#the-data-dir). A second one on the same dir would take
 * the first one's runs in progress for a crash's leftovers and end them, share its database, and
 * remove its runtime.json when it stopped. The lock is the operating system's: an exclusive
 * SQLite lock on `<dataDir>/runtime.lock`, held by an open connection from before the store opens
 * until the runtime stops. The kernel drops it when the process ends however it ends, so there is
 * no stale lock to judge, no pid that could be reused, and no race between two starts: one of
 * them gets SQLITE_BUSY at once.
 */

/** Tries again after SQLITE_BUSY before the data dir counts as in use (at most about 125 ms in all). */
const BUSY_TRIES = 5;
/** For a synchronous pause between tries (Atomics.wait on a value that never changes). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));
/**
 * Every lock this process holds. better-sqlite3 closes a connection that is garbage collected, and
 * that would drop the lock while its holder runs on: a caller that let go of the DataDirLock
 * object (or kept it only in a closure the collector can reach) would lose the data dir without a
 * word. Held here, a lock lasts until release() or the end of the process, and nothing else.
 */
const HELD = new Set<Database.Database>();

export interface DataDirLock {
  /** Releases the lock (idempotent). */
  release(): void;
}

export function lockDataDir(dataDir: string, then = 'stop it first, or give this one its own --data-dir', what: { dir: string; holder: string } = { dir: 'data dir', holder: 'runtime' }): DataDirLock {
  // A second hold in this same process is SQLITE_BUSY too: SQLite keeps one lock per file and process.
  const path = join(dataDir, 'runtime.lock');
  let db: Database.Database | undefined;
  let busy = 0;
  let emptied = false;
  while (db === undefined) {
    let opened: Database.Database;
    try {
      opened = new Database(path, { timeout: 0 });
    } catch (err) {
      // SQLite says "unable to open database file": the file system says why (read-only, full).
      throw new CliError(`cannot lock the ${what.dir} ${dataDir}: ${unwritableReason(dataDir) ?? fsReason(err)}.`);
    }
    try {
      tightenMode(path, 0o600);
      opened.pragma('locking_mode = EXCLUSIVE');
      // Takes the lock (the file's write lock, and in EXCLUSIVE mode keeps it) without writing.
      opened.exec('BEGIN EXCLUSIVE');
      db = opened;
    } catch (err) {
      opened.close();
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY')) {
        // SQLite takes EXCLUSIVE through SHARED, so starts at the same instant can each see the
        // others' SHARED and all be refused, none holding. A few tries a few ms apart settle it;
        // a real holder keeps the lock, so busy after them is in use.
        if (busy++ >= BUSY_TRIES) throw inUse(dataDir, then, what);
        Atomics.wait(PAUSE, 0, 0, 5 + Math.floor(Math.random() * 20));
        continue;
      }
      // Some other file by that name (an older release wrote a pid there): emptied in place, the
      // same inode, so a runtime that holds it already still does and this one then finds it busy.
      if (code === 'SQLITE_NOTADB' && !emptied) {
        truncateSync(path, 0);
        emptied = true;
        continue;
      }
      throw new CliError(`cannot lock the ${what.dir} ${dataDir}: ${unwritableReason(dataDir) ?? (err as Error).message}.`);
    }
  }
  const held = db;
  HELD.add(held);
  return {
    release() {
      if (!HELD.delete(held)) return;
      held.close();
    },
  };
}

/** The one sentence for a data dir in use, naming the other runtime as its runtime.json does. */
function inUse(dataDir: string, then: string, what: { dir: string; holder: string }): CliError {
  const other = what.holder === 'runtime' ? readRuntimeFile(dataDir) : undefined;
  const who = other ? ` (pid ${other.pid}, ${other.url})` : '';
  return new CliError(`the ${what.dir} ${dataDir} is in use by another ${what.holder}${who}; ${then}.`);
}
