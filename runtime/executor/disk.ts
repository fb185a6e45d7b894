import { execFile } from 'node:child_process';
import path from 'node:path';

/**
 * The disk limit of a run's workspace (docs/security.md#limits). No file system this runtime can
 * count on gives a directory a quota of its own, so the workspace is measured while the run works,
 * every DISK_CHECK_MS, and a run past its limit is stopped like a cancelled one and fails with
 * `workspace_too_large`. Between two measures a run can write past the limit by what it writes in
 * that time: the limit keeps a runaway run from filling the disk, it is not a byte-exact quota.
 */

/** Between the end of one measure and the start of the next. */
export const DISK_CHECK_MS = 5_000;

/** What a measure found: the bytes counted, and the first directory it could not read, if any. */
export interface DiskUsage {
  bytes: number;
  /** Relative to the root: a directory the runtime could not read (the measure is then incomplete). */
  unreadable?: string;
  /** Why du gave no measure at all (it could not be started, or it was killed). */
  failed?: string;
}

/**
 * The disk a directory tree takes, by `du -s -k -x` (coreutils, or the BSD one): the blocks
 * allocated to its entries (a sparse file counts what it holds, not its length), each inode once
 * however many hard links it has, symbolic links never followed, other file systems not entered.
 * du opens each directory without following a link and checks it is the one it listed, so a run
 * that swaps a directory for a link to the host's files while it is measured cannot send the
 * measure there; the runtime's own walk could not promise that. A directory the runtime may not read
 * (a run's `chmod 000`, which would hide what it holds) is named in `unreadable`; entries that
 * vanish during the measure are not counted. A tree that does not exist (yet) takes 0 bytes.
 */
export function diskUsage(root: string, signal?: AbortSignal): Promise<DiskUsage> {
  return new Promise((resolve, reject) => {
    execFile('du', ['-s', '-k', '-x', '--', root], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' }, signal, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      // An exit code of its own (1: some entry could not be read) still comes with the total.
      if (err && typeof (err as { code?: unknown }).code !== 'number') {
        const e = err as NodeJS.ErrnoException;
        resolve({ bytes: 0, failed: `du could not be run (${e.code ?? e.message})` });
        return;
      }
      resolve(parseDu(root, stdout, stderr));
    });
  });
}

/** du's answer for `root`: its total in KiB on stdout, and one line on stderr for each entry it could not read. */
export function parseDu(root: string, stdout: string, stderr: string): DiskUsage {
  const total = /^(\d+)\s/.exec(stdout);
  const bytes = total ? Number(total[1]) * 1024 : 0;
  for (const line of stderr.split('\n')) {
    // "du: cannot read directory '/w/x': Permission denied" (GNU), "du: /w/x: Permission denied" (BSD).
    if (!/Permission denied$/.test(line)) continue;
    const named = /'(.*)'/.exec(line)?.[1] ?? /^du: (.*): Permission denied$/.exec(line)?.[1];
    return { bytes, unreadable: named ? path.relative(root, named) || '.' : '.' };
  }
  return { bytes };
}

export interface DiskWatch {
  /** Stops measuring (idempotent); a measure in progress is killed and reports nothing. */
  stop(): void;
  /** Measures once more now, and reports it as a periodic measure would be reported. */
  final(): Promise<void>;
}

/**
 * Measures `dir` every `everyMs` (after the previous measure ended, so two never overlap) and calls
 * `over(usage)` once, the first time it holds more than `limitBytes`, or holds a directory that
 * cannot be measured (which could hide any amount), or cannot be measured at all.
 */
export function watchDisk(dir: string, limitBytes: number, everyMs: number, over: (usage: DiskUsage) => void): DiskWatch {
  let stopped = false;
  let told = false;
  let timer: NodeJS.Timeout | undefined;
  const measuring = new AbortController();
  const judge = (usage: DiskUsage): void => {
    if (!stopped && !told && (usage.bytes > limitBytes || usage.unreadable !== undefined || usage.failed !== undefined)) {
      told = true;
      over(usage);
    }
  };
  const tick = () => {
    timer = undefined;
    diskUsage(dir, measuring.signal).then(
      (usage) => {
        judge(usage);
        if (!stopped && !told) schedule();
      },
      // Only a stop aborts a measure.
      () => {},
    );
  };
  const schedule = () => {
    timer = setTimeout(tick, everyMs);
    timer.unref();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      measuring.abort();
    },
    async final() {
      judge(await diskUsage(dir, measuring.signal));
    },
  };
}
