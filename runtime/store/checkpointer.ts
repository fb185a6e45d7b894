import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { SqliteDB } from './db.ts';

/** What a checkpoint reports: SQLite's `PRAGMA wal_checkpoint` row. */
interface CheckpointRow {
  /** 1 when another connection held the checkpoint lock, so nothing was copied. */
  busy: number;
  /** Frames in the WAL. */
  log: number;
  /** Of those, frames now copied into the database. */
  checkpointed: number;
}

export interface CheckpointerOptions {
  /** While writes come in: ask the thread for a checkpoint this often. */
  busyMs?: number;
  /** With nothing new in the WAL: ask this seldom. */
  idleMs?: number;
  /**
   * Once the WAL holds this many frames (pages of 4 KB), the main connection copies what the thread
   * has not yet, so that the next write starts the WAL over from its beginning: the WAL's bound.
   */
  restartFrames?: number;
  /**
   * The WAL's hard bound, in frames: should writes outrun the thread (bodies of hundreds of KB
   * under load), the main connection waits for the thread's checkpoint to end and then copies the
   * rest itself, holding the event loop meanwhile, as SQLite's own checkpoint would.
   */
  hardFrames?: number;
  /** How often the main thread looks at the WAL's size against `hardFrames`. */
  checkMs?: number;
  /** Told, once, when the thread fails and the main connection goes back to checkpointing itself. */
  onFallback?: (reason: string) => void;
}

export interface CheckpointStats {
  /** Checkpoints the thread ran. */
  thread: number;
  /** Checkpoints the main connection ran to restart the WAL, and the frames they copied (the rest was the thread's). */
  main: number;
  mainFrames: number;
  /** The most frames the WAL held at a checkpoint of the thread. */
  maxLog: number;
  /** Checkpoints the main connection had to wait for because the WAL passed its hard bound. */
  forced: number;
  /** The largest the WAL file was when its size was looked at. */
  maxFileBytes: number;
}

/** A checkpoint the thread does not answer within this long is given up on (fallback). */
const WATCHDOG_MS = 30_000;
/** The longest a checkpoint at the hard bound waits for the thread's, or for another process's readers. */
const FORCE_WAIT_MS = 1000;
/** A WAL frame: its 24-byte header and the page. */
const frameBytes = (pageSize: number) => pageSize + 24;

/**
 * Checkpoints of the runtime's SQLite database in a worker thread (docs/runtime.md#checkpoints).
 * SQLite's own automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL frames, on the
 * event loop: under load, a stall of several milliseconds every few hundred deliveries. Here the
 * main connection's automatic checkpoint is off, and a thread with its own connection copies the
 * committed frames back (PASSIVE: it never takes the write lock). A checkpoint alone cannot restart
 * the WAL while writes keep coming (it is never fully caught up when the next write begins), so
 * once the WAL holds `restartFrames` frames, the main connection copies the few the thread has
 * not yet: then it is caught up, and the next write starts the WAL over. `journal_size_limit`
 * makes that write also cut the file back to `restartFrames`, so the file's size tells the main
 * thread, without asking SQLite, when the WAL has outgrown its hard bound (`hardFrames`): then it
 * waits for the thread and checkpoints the rest itself. Should the thread fail, the main
 * connection checkpoints by itself again, as SQLite does by default.
 */
export class Checkpointer {
  private readonly worker: Worker;
  /** Settles when the thread has ended, its connection closed. */
  private readonly exited: Promise<void>;
  /** Whether the thread has ended (tests). */
  threadEnded = false;
  private readonly busyMs: number;
  private readonly idleMs: number;
  private readonly restartFrames: number;
  private readonly mainCheckpoint;
  private readonly forceCheckpoint;
  private timer: NodeJS.Timeout | undefined;
  private readonly sizeTimer: NodeJS.Timeout;
  private readonly walPath: string;
  private readonly hardBytes: number;
  /** The WAL file's size when the main connection last forced a checkpoint: until a write changes it, there is nothing to force. */
  private forcedAt = -1;
  /** While the thread is checkpointing: resolved with its answer. */
  private inFlight: { done: Promise<void>; resolve: () => void } | undefined;
  private lastLog = -1;
  private stopped = false;
  private readonly stats: CheckpointStats = { thread: 0, main: 0, mainFrames: 0, maxLog: 0, forced: 0, maxFileBytes: 0 };

  constructor(
    private readonly db: SqliteDB,
    path: string,
    private readonly options: CheckpointerOptions = {},
  ) {
    this.busyMs = options.busyMs ?? 20;
    this.idleMs = options.idleMs ?? 1000;
    this.restartFrames = options.restartFrames ?? 4000;
    this.mainCheckpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
    // RESTART: waits (busy_timeout) for the thread's checkpoint, copies the rest, and makes sure the next write starts the WAL over.
    this.forceCheckpoint = db.prepare('PRAGMA wal_checkpoint(RESTART)');
    const frame = frameBytes(db.pragma('page_size', { simple: true }) as number);
    this.walPath = `${path}-wal`;
    this.hardBytes = (options.hardFrames ?? 4 * this.restartFrames) * frame;
    db.pragma('wal_autocheckpoint = 0');
    db.pragma(`journal_size_limit = ${this.restartFrames * frame}`);
    this.sizeTimer = setInterval(() => this.checkSize(), options.checkMs ?? this.busyMs);
    this.sizeTimer.unref();
    this.worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { path } });
    this.worker.unref();
    this.worker.on('message', (m: CheckpointRow | { error: string }) => this.answered(m));
    this.worker.on('error', (err) => this.fallback(err.message));
    this.exited = new Promise<void>((resolve) => {
      this.worker.on('exit', (code) => {
        this.threadEnded = true;
        resolve();
        if (!this.stopped) this.fallback(`the checkpoint thread exited with code ${code}`);
      });
    });
    this.schedule(this.busyMs);
  }

  /** How the work was shared so far (tests, the bench). */
  get counts(): CheckpointStats {
    return { ...this.stats };
  }

  /** Resolves once no checkpoint is in flight (tests pace their writes with it). */
  async idle(): Promise<void> {
    await this.inFlight?.done;
  }

  /** Stops the thread; the main connection checkpoints by itself again (its close checkpoints too). */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.sizeTimer);
    this.settle();
    this.worker.postMessage('stop');
    this.giveBack();
  }

  /**
   * `stop`, then waits (at most `waitMs`) for the thread to close its connection and end. Closing
   * the main connection after that makes it the last one, whose close checkpoints and removes the
   * WAL, so nothing touches the database's files once the runtime has closed.
   */
  async stopAndWait(waitMs = 5_000): Promise<void> {
    this.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  /**
   * Whether the checkpoints are still this thread's and the main connection's timers', none in the
   * commits (store/wal-sync.ts commits the group commits' batches without their fsync only then).
   */
  get ownsCheckpoints(): boolean {
    // Stopped or fallen back: both hand the checkpoints back to the commits (`giveBack`).
    return !this.stopped;
  }

  /** SQLite's defaults again on the main connection: it checkpoints in its commits, and keeps the WAL file's size. */
  private giveBack(): void {
    if (!this.db.open) return;
    this.db.pragma('wal_autocheckpoint = 1000');
    this.db.pragma('journal_size_limit = -1');
  }

  /** The hard bound: past it, wait for the thread and copy the rest here. */
  private checkSize(): void {
    if (this.stopped) return;
    this.onMain(() => this.forceIfPastBound());
  }

  /**
   * Runs a checkpoint of the main connection's, from a timer or the thread's answer: never inside
   * a transaction, and never throwing out of that callback. A checkpoint that fails (the disk, a
   * lock) leaves the WAL as it is, as a failed automatic checkpoint of SQLite's would; the commits
   * go on, and the next look or answer tries again.
   */
  private onMain(checkpoint: () => void): void {
    if (!this.db.open || this.db.inTransaction) return;
    try {
      checkpoint();
    } catch {
      // as above
    }
  }

  private forceIfPastBound(): void {
    const size = statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
    this.stats.maxFileBytes = Math.max(this.stats.maxFileBytes, size);
    if (size <= this.hardBytes || size === this.forcedAt) return;
    // At most a second: a reader of another process (a backup) can hold the WAL far longer, and then
    // this gives up and tries again once a commit has changed the file, as SQLite's own would.
    const busyTimeout = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma(`busy_timeout = ${Math.min(busyTimeout, FORCE_WAIT_MS)}`);
    let row: CheckpointRow;
    try {
      row = this.forceCheckpoint.get() as CheckpointRow;
    } finally {
      this.db.pragma(`busy_timeout = ${busyTimeout}`);
    }
    this.forcedAt = size;
    if (row.busy === 0) this.stats.forced += 1;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.ask(), ms);
    this.timer.unref();
  }

  private ask(): void {
    if (this.stopped) return;
    let resolve!: () => void;
    this.inFlight = { done: new Promise<void>((r) => (resolve = r)), resolve };
    this.worker.postMessage('checkpoint');
    // An answer is due within milliseconds; a thread that gives none would leave the WAL unbounded.
    this.timer = setTimeout(() => {
      void this.worker.terminate();
      this.fallback(`the checkpoint thread did not answer in ${WATCHDOG_MS / 1000} s`);
    }, WATCHDOG_MS);
    this.timer.unref();
  }

  private answered(m: CheckpointRow | { error: string }): void {
    clearTimeout(this.timer);
    this.settle();
    if (this.stopped) return;
    if ('error' in m) {
      // A checkpoint that failed (the disk, a lock held by another process) is tried again later.
      this.schedule(this.idleMs);
      return;
    }
    if (m.busy === 0) this.stats.thread += 1;
    this.stats.maxLog = Math.max(this.stats.maxLog, m.log);
    // The thread is idle now, so the main connection's checkpoint never finds the lock taken by it.
    if (m.log >= this.restartFrames) this.onMain(() => this.restart(m));
    const quiet = m.log === this.lastLog && m.checkpointed === m.log;
    this.lastLog = m.log;
    this.schedule(quiet ? this.idleMs : this.busyMs);
  }

  /** Copies on the main connection what the thread has not copied yet; the next write then restarts the WAL. */
  private restart(thread: CheckpointRow): void {
    const row = this.mainCheckpoint.get() as CheckpointRow;
    if (row.busy === 0) {
      this.stats.main += 1;
      this.stats.mainFrames += Math.max(0, row.checkpointed - Math.max(0, thread.checkpointed));
      this.lastLog = -1;
    }
  }

  private settle(): void {
    this.inFlight?.resolve();
    this.inFlight = undefined;
  }

  private fallback(reason: string): void {
    this.settle();
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.sizeTimer);
    this.giveBack();
    this.options.onFallback?.(reason);
  }
}
