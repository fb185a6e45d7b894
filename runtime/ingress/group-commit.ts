import type { AcceptItem, AcceptResult, BatchOutcome } from '../store/deliveries.ts';

/**
 * Group commit for SPEC 7.1 steps 8 and 9. Each request that reaches the Accepted/Duplicate
 * decision queues its delivery here; once per event-loop turn (setImmediate, i.e. after the
 * I/O callbacks of this turn have run) everything queued is written by `store.acceptBatch` in
 * one transaction, and only then is each request's promise settled, so every 202 still
 * follows the commit that holds its delivery (and its runs).
 *
 * Why: with WAL, the commit (and its WAL write) was most of an Accepted delivery's cost; under
 * load one commit now carries many deliveries. A lone request waits one turn, not a timer.
 * Semantics are those of one-by-one commits: items run in arrival order, each in its own
 * savepoint, so a duplicate identity within a batch is a Duplicate and a throwing hook fails
 * only its own delivery (see `acceptBatch`). If the transaction itself fails, every request of
 * the batch gets the error (a 500: nothing of the batch was committed).
 */
export class GroupCommit {
  /** Most deliveries per transaction; the rest go into the next one, in the same turn. */
  static readonly MAX_BATCH = 256;

  private queue: { item: AcceptItem; resolve: (r: AcceptResult) => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;

  constructor(private readonly commit: (items: readonly AcceptItem[]) => BatchOutcome[]) {}

  /** Queues one delivery; resolves after the commit that holds it. */
  accept(item: AcceptItem): Promise<AcceptResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  /** Deliveries waiting for the next commit (for tests and metrics). */
  get pending(): number {
    return this.queue.length;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, GroupCommit.MAX_BATCH);
      let outcomes: BatchOutcome[];
      try {
        outcomes = this.commit(batch.map((p) => p.item));
      } catch (err) {
        for (const p of batch) p.reject(err);
        continue;
      }
      for (let i = 0; i < batch.length; i++) {
        const o = outcomes[i];
        if (o.ok) batch[i].resolve(o.result);
        else batch[i].reject(o.error);
      }
    }
  };
}
