import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CliError } from '../core/errors.ts';
import { fsReason } from '../core/fs-reason.ts';

/**
 * One runtime per data dir (docs/runtime.md#the-data-dir). A second one on the same dir would take
 * the first one's runs in progress for a crash's leftovers and end them, share its database, and
 * remove its runtime.json when it stopped. `<dataDir>/runtime.lock` holds the owner's pid from
 * before the store opens until the runtime stops; a lock whose process is gone (a SIGKILL, a
 * container restarted) is taken over.
 */

/** Data dirs held by this process, by path: a second start in the same process is refused too. */
const heldHere = new Set<string>();

export interface DataDirLock {
  /** Removes the lock file (idempotent). */
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, 'runtime.lock');
  if (heldHere.has(path)) throw inUse(dataDir, process.pid);
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new CliError(`cannot lock the data dir ${dataDir}: ${fsReason(err)}.`);
      const owner = ownerOf(path);
      if (owner !== undefined && owner !== process.pid && runtimeAlive(owner)) throw inUse(dataDir, owner);
      // Left by a process that is gone (or by this pid in an earlier life, as pid 1 in a container).
      if (attempt > 0) throw inUse(dataDir, owner);
      rmSync(path, { force: true });
      continue;
    }
    try {
      writeSync(fd, `${process.pid}\n`);
    } finally {
      closeSync(fd);
    }
    heldHere.add(path);
    let held = true;
    return {
      release() {
        if (!held) return;
        held = false;
        heldHere.delete(path);
        // Only our own: a lock another process took over after a long stall is left to it.
        if (ownerOf(path) === process.pid) rmSync(path, { force: true });
      },
    };
  }
}

function ownerOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True while `pid` runs and, where /proc tells, runs node: a pid reused by an unrelated process
 * after a restart does not hold the data dir.
 */
function runtimeAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return /node|factory/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return true;
  }
}

function inUse(dataDir: string, pid: number | undefined): CliError {
  const url = runtimeUrl(dataDir);
  const who = [pid !== undefined ? `pid ${pid}` : undefined, url].filter(Boolean).join(', ');
  return new CliError(`the data dir ${dataDir} is in use by another runtime${who ? ` (${who})` : ''}; stop it first, or give this one its own --data-dir.`);
}

function runtimeUrl(dataDir: string): string | undefined {
  try {
    const url = (JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { url?: unknown }).url;
    return typeof url === 'string' ? url : undefined;
  } catch {
    return undefined;
  }
}
