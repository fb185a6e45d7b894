import { closeSync, fsync, openSync } from 'node:fs';
import type { SqliteDB } from './db.ts';

/**
 * How a group commit makes its transaction durable (store/group-commit.ts): `unsynced` runs the
 * transaction, `sync` calls back once what it wrote is on disk.
 */
export interface Durability {
  /** Runs `fn`, one group commit's transaction, without waiting for the disk in its COMMIT. */
  unsynced<T>(fn: () => T): T;
  /**
   * Calls `done` once an fsync that began after this call has ended (`null`), or failed (its
   * error: then nothing written before this call is known to be on disk).
   */
  sync(done: (err: Error | null) => void): void;
}

/**
 * The SQLite engine's durability for the group commits (docs/runtime.md#durability). A commit
 * with `synchronous = FULL` waits for the WAL's fsync on the event loop, where nothing else can
 * run meanwhile (half a millisecond or more of each batch on an ordinary disk, several on a
 * network disk). Here the batch's transaction commits with `synchronous = OFF` (its frames are
 * written to the WAL file, not yet flushed), every other transaction of the connection keeps
 * FULL, and the WAL file is then fsynced on libuv's thread pool while the event loop goes on; the
 * batch's requests are answered when that fsync ends. An fsync flushes the whole file, so it
 * carries every batch committed before it began.
 *
 * What an answer means is unchanged: it follows the fsync of the WAL that holds its write. What
 * another request may read before that fsync ends (the delivery log, a run's state) is what it
 * would have read with FULL, a moment sooner; anything of the runtime's own that acts on such a
 * row outside the database (the executor starting a run) first commits a write of its own with
 * FULL, whose fsync carries the batch's frames, which come before it in the same file.
 */
export class WalSync implements Durability {
  /** The WAL file's descriptor, opened at the first fsync. */
  private walFd: number | undefined;
  /** Callbacks of the fsync in flight, if any. */
  private flushing: ((err: Error | null) => void)[] | undefined;
  /** Callbacks that wait for the next fsync (they came after the one in flight began). */
  private next: ((err: Error | null) => void)[] = [];

  /**
   * `checkpointsElsewhere`: true while no checkpoint runs inside the connection's commits (the
   * checkpoint thread owns them, store/checkpointer.ts). `flushFile`: node:fs's `fsync` (tests
   * pass one that records its calls).
   */
  constructor(
    private readonly db: SqliteDB,
    private readonly walPath: string,
    private readonly checkpointsElsewhere: () => boolean,
    private readonly flushFile: typeof fsync = fsync,
  ) {}

  unsynced<T>(fn: () => T): T {
    // A connection that checkpoints inside its own commits (SQLite's default: a store opened
    // without the checkpoint thread, or once the thread failed) keeps FULL for the batch too: such
    // a checkpoint takes its fsyncs from the commit's setting, and one without them could let the
    // WAL start over before the database file holds what was copied into it.
    if (!this.checkpointsElsewhere()) return fn();
    // Not a prepared statement: SQLite applies this pragma when it compiles it, not when it runs.
    this.db.exec('PRAGMA synchronous = OFF');
    try {
      return fn();
    } finally {
      this.db.exec('PRAGMA synchronous = FULL');
    }
  }

  sync(done: (err: Error | null) => void): void {
    this.next.push(done);
    if (!this.flushing) this.flush();
  }

  /** Closes the WAL's descriptor (the store's close). */
  close(): void {
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = undefined;
  }

  private flush(): void {
    const waiting = (this.flushing = this.next);
    this.next = [];
    const settle = (err: Error | null) => {
      this.flushing = undefined;
      for (const done of waiting) done(err);
      if (this.next.length > 0) this.flush();
    };
    let fd: number;
    try {
      fd = this.openWal();
    } catch (err) {
      // Asynchronously, as an fsync's answer would come.
      setImmediate(settle, err as Error);
      return;
    }
    this.flushFile(fd, settle);
  }

  /**
   * The WAL's descriptor, opened once. In WAL mode SQLite keeps that file for as long as a
   * connection is open: a checkpoint that starts the WAL over writes over it or truncates it, and
   * only the last connection's close removes it. The runtime never leaves WAL mode, and this
   * object lives and dies with its connection (the store's close).
   */
  private openWal(): number {
    this.walFd ??= openSync(this.walPath, 'r');
    return this.walFd;
  }
}
