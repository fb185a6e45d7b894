import type { DB } from './db.ts';
import type { Durability } from './wal-sync.ts';

/** The result of one item of a group commit: its value, or the error that rolled back its savepoint. */
export type BatchOutcome<R> = { ok: true; result: R } | { ok: false; error: unknown };

/** A group commit's attempt to write a whole batch at once (`savepointBatch`'s `whole`): for the batches it `fits`, each item's result. */
export interface WholeBatch<I, R, A extends unknown[]> {
  fits(items: readonly I[], ...args: A): boolean;
  write(items: readonly I[], ...args: A): R[];
}

/**
 * The store's side of a group commit: `one` for each item, in order, with the batch's shared
 * `args`, inside ONE immediate transaction, with the meaning of one-by-one commits: an item that
 * throws is rolled back alone and reported as `{ok: false}`, the others commit. If SQLite rolled
 * the whole transaction back (e.g. disk full), the batch throws and nothing is committed.
 * `finish`, when given, runs last in the same transaction with every outcome (upkeep that belongs
 * with the batch's writes, e.g. the delivery log's cap on Rejected entries); if it throws, the
 * batch throws.
 *
 * Items rarely throw, so the batch is first written without a savepoint per item (SAVEPOINT and
 * RELEASE cost as much as a small insert). If an item throws, that whole attempt is rolled back
 * and the batch is written again with each item in a savepoint of its own (`db.transaction(one)`,
 * a SAVEPOINT when nested), which gives the one-by-one meaning above. So `one` must have no
 * effect outside the transaction that matters when it runs twice: its writes are undone with the
 * first attempt, and anything else it does must be harmless to repeat (waking the executor is).
 *
 * `whole`, when given, is a first attempt of another kind for the batches it `fits`: all the
 * items written at once (e.g. PostgreSQL's one statement for a whole batch of log entries,
 * store/deliveries.ts), with the meaning of `one` for each, then `finish`, in one transaction. If
 * anything of it throws, that attempt is rolled back and the batch is written item by item in
 * savepoints, as above; the same rule on repeating applies to it.
 */
export function savepointBatch<I, R, A extends unknown[] = []>(
  db: DB,
  one: (item: I, ...args: A) => R,
  finish?: (items: readonly I[], outcomes: readonly BatchOutcome<R>[], ...args: A) => void,
  whole?: WholeBatch<I, R, A>,
): (items: readonly I[], ...args: A) => BatchOutcome<R>[] {
  const guarded = db.transaction(one);
  /** Whether the last attempt without savepoints stopped at an item that threw (and not elsewhere). */
  let itemThrew = false;
  // One attempt: the items' outcomes by `attempt`, then `finish`, in one transaction.
  const batchOf = (attempt: (items: readonly I[], args: A) => BatchOutcome<R>[]) =>
    db.transaction((items: readonly I[], args: A) => {
      const outcomes = attempt(items, args);
      finish?.(items, outcomes, ...args);
      return outcomes;
    });
  const together = whole && batchOf((items, args) => whole.write(items, ...args).map((result) => ({ ok: true, result })));
  const direct = batchOf((items, args) =>
    items.map((item) => {
      let result: R;
      try {
        result = one(item, ...args);
      } catch (error) {
        itemThrew = true;
        throw error;
      }
      // Something under the item ended the transaction without throwing: the rest must not be
      // written outside it, one autocommit at a time.
      if (!db.inTransaction) throw new Error('The transaction of a group commit ended before its last item.');
      return { ok: true, result };
    }),
  );
  const oneByOne = batchOf((items, args) =>
    items.map((item) => {
      try {
        return { ok: true, result: guarded(item, ...args) };
      } catch (error) {
        if (!db.inTransaction) throw error;
        return { ok: false, error };
      }
    }),
  );
  return (items, ...args) => {
    if (together && whole.fits(items, ...args)) {
      try {
        return together.immediate(items, args);
      } catch {
        return oneByOne.immediate(items, args);
      }
    }
    itemThrew = false;
    try {
      return direct.immediate(items, args);
    } catch (err) {
      if (!itemThrew) throw err;
      return oneByOne.immediate(items, args);
    }
  };
}

/**
 * Group commit: each request that has a write to make queues it here; once per event-loop turn
 * (setImmediate, i.e. after the I/O callbacks of this turn have run) everything queued is written
 * by `commit` in one transaction, and only then is each request's promise settled, so every
 * answer (a 202 of the ingress, docs/ingress.md; a 201 of the run API, docs/api.md) follows the
 * commit that holds its write, and the fsync that put it on disk.
 *
 * Why: a durable commit is an fsync; under load one fsync now carries many writes instead of one
 * each, and on SQLite it runs off the event loop (`durable`, store/wal-sync.ts), which goes on
 * reading requests and committing the next batch meanwhile. A lone request waits one turn and
 * one fsync, not a timer. `commit` must give the semantics of one-by-one commits: items in
 * arrival order, each in its own savepoint, so one item that throws fails only itself (see
 * `acceptBatch`, `createBatch`). If the transaction itself fails, every request of the batch gets the error
 * (nothing of the batch was committed).
 *
 * Used by the ingress (runtime/ingress/state.ts: every delivery it logs, Rejected ones too) and
 * the run API (runtime/routes/runs.ts).
 */
export class GroupCommit<I, R> {
  /** Most items per transaction; the rest go into the next one, in the same turn. */
  static readonly MAX_BATCH = 256;

  private queue: Pending<I, R>[] = [];
  private scheduled = false;
  /** With `durable`: the fsync of the last batches is in flight; what is queued meanwhile waits for it, and commits as one batch. */
  private syncing = false;

  /**
   * `onBatch` hears the size of every batch committed (the batch-size metric,
   * docs/runtime.md#metrics). `durable`, the SQLite file's (store/wal-sync.ts): each batch commits
   * without waiting for the disk, and its items settle once the WAL's fsync, off the event loop,
   * has ended; while that fsync runs, the next requests queue, and commit together when it ends
   * (they could not have been answered before it anyway). Without `durable` (PostgreSQL, a
   * database in memory) items settle when `commit` returns, whose COMMIT has waited for the disk.
   */
  constructor(
    private readonly commit: (items: readonly I[]) => BatchOutcome<R>[],
    private readonly onBatch?: (size: number) => void,
    private readonly durable?: Durability,
  ) {}

  /** Queues one item; resolves after the commit that holds it. */
  submit(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.syncing) this.schedule();
    });
  }

  /** The next flush, after this turn's I/O callbacks, unless one is already coming. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Items waiting for the next commit (for tests and metrics). */
  get pending(): number {
    return this.queue.length;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const written: { batch: Pending<I, R>[]; outcomes: BatchOutcome<R>[] }[] = [];
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, GroupCommit.MAX_BATCH);
      this.onBatch?.(batch.length);
      const items = batch.map((p) => p.item);
      let outcomes: BatchOutcome<R>[];
      try {
        outcomes = this.durable ? this.durable.unsynced(() => this.commit(items)) : this.commit(items);
      } catch (err) {
        for (const p of batch) p.reject(err);
        continue;
      }
      if (this.durable) written.push({ batch, outcomes });
      else settle(batch, outcomes);
    }
    if (written.length === 0 || !this.durable) return;
    this.syncing = true;
    this.durable.sync((err) => {
      this.syncing = false;
      // An fsync that failed leaves the batches' writes in the database but not known to be on
      // disk: every item fails with the system's error (a storage failure, docs/runtime.md).
      for (const { batch, outcomes } of written) {
        if (err) for (const p of batch) p.reject(err);
        else settle(batch, outcomes);
      }
      if (this.queue.length > 0) this.schedule();
    });
  };
}

interface Pending<I, R> {
  item: I;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

function settle<R>(batch: readonly Pending<unknown, R>[], outcomes: readonly BatchOutcome<R>[]): void {
  for (let i = 0; i < batch.length; i++) {
    const o = outcomes[i];
    if (o.ok) batch[i].resolve(o.result);
    else batch[i].reject(o.error);
  }
}
