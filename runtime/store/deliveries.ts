import { iso } from '../clock.ts';
import type { StoreContext } from './index.ts';
import { savepointBatch, type BatchOutcome } from './group-commit.ts';
import { entriesWithClaims, entryWithClaim, memoryClaims, tableClaims, type Claims } from './claims.ts';
import type { SqliteDB, Statement } from './db.ts';

/**
 * The delivery log (docs/ingress.md#identity, docs/ingress.md#delivery-log): entries, stored
 * payloads of Accepted entries, and accepted identities. The only place with delivery SQL.
 * Statements are prepared once.
 */

export type DeliveryOutcome = 'accepted' | 'duplicate' | 'rejected_auth' | 'rejected_invalid_json' | 'rejected_too_large';

/** The outcome labels (docs/ingress.md#delivery-log), shown by the API, the CLI and the dashboard. */
export const OUTCOME_LABELS: Record<DeliveryOutcome, string> = {
  accepted: 'Accepted',
  duplicate: 'Duplicate',
  rejected_auth: 'Rejected (auth)',
  rejected_invalid_json: 'Rejected (invalid JSON)',
  rejected_too_large: 'Rejected (too large)',
};

/** What the pipeline knows about a request, minus the outcome. */
export interface DeliveryFacts {
  webhookUid: string;
  deliveryId: string;
  size: number;
  receivedAt: Date;
  sender?: string;
  contentType?: string;
  userAgent?: string;
  /** The secret version that authenticated the request (docs/runtime.md#graceful-rotation). */
  secretVersion?: number | null;
  /** Logged as the entry's reason when it has none: a handshake's note (docs/signatures.md#handshakes). */
  note?: string;
}

/** How an Accepted handshake's entry reason starts (docs/signatures.md#handshakes): `handshake: url_verification`. */
export const HANDSHAKE_REASON = 'handshake: ';

/** The kind of provider handshake an entry logged (`url_verification`), or undefined for any other entry. */
export function handshakeKind(entry: Pick<DeliveryEntry, 'outcome' | 'reason'>): string | undefined {
  return entry.outcome === 'accepted' && entry.reason?.startsWith(HANDSHAKE_REASON) ? entry.reason.slice(HANDSHAKE_REASON.length) : undefined;
}

export interface DeliveryEntry {
  seq: number;
  webhookUid: string;
  deliveryId: string;
  outcome: DeliveryOutcome;
  reason: string | null;
  size: number;
  receivedAt: string;
  sender: string | null;
  contentType: string | null;
  userAgent: string | null;
  hasPayload: boolean;
  /** The secret version that authenticated it; null for rejections. */
  secretVersion: number | null;
}

/** An Accepted entry as it is handed to `onAccepted` hooks, inside the accepting transaction. */
export interface AcceptedDelivery extends DeliveryFacts {
  seq: number;
  payload: Buffer;
}

export type AcceptResult = { outcome: 'accepted'; seq: number } | { outcome: 'duplicate'; seq: number };

type RejectedOutcome = Exclude<DeliveryOutcome, 'accepted' | 'duplicate'>;

/** One delivery of a group commit (`acceptBatch`). */
export interface AcceptItem {
  facts: DeliveryFacts;
  payload: Buffer;
  /**
   * Called inside the batch's transaction when it is Accepted (run creation, docs/automations.md);
   * again, after a rollback of its first writes, when another item of the batch threw (group-commit.ts).
   */
  onAccepted?: (delivery: AcceptedDelivery) => void;
}

/** One rejected request of a group commit (`writeBatch`): logged, nothing else. */
export interface RejectItem {
  facts: DeliveryFacts;
  outcome: RejectedOutcome;
  reason: string | null;
}

/** One write of the ingress's group commit: an Accepted-or-Duplicate decision, or a rejection. */
export type DeliveryWrite = ({ kind: 'accept' } & AcceptItem) | ({ kind: 'reject' } & RejectItem);

export type WriteResult = AcceptResult | { outcome: RejectedOutcome; seq: number };

export interface WriteLimits {
  /** Accepted identities are remembered this many days. */
  identityDays: number;
  /** Only the newest N Rejected entries of a webhook are kept. */
  rejectedKeep: number;
}

export interface PruneLimits {
  /** Newest N entries per webhook are always kept. */
  keep: number;
  /** Entries younger than this many days are kept. */
  days: number;
  /** Accepted identities are remembered this many days. */
  identityDays: number;
  /** Only the newest N Rejected entries of a webhook are kept, whatever their age. */
  rejectedKeep: number;
}

/** What one step of the background upkeep removed, and whether it stopped with work left. */
export interface PruneStep {
  entries: number;
  identities: number;
  rejected: number;
  more: boolean;
}

/** Most rows one upkeep step (or one trim of Rejected entries) deletes: a few milliseconds of work. */
export const PRUNE_BATCH = 200;
/**
 * Most payload bytes one step moves: each entry that goes costs its payload once, plus once per
 * run that gets its own copy first. 200 entries of 250 KB read by several runs each were over a
 * second of one transaction; this keeps a step at a few milliseconds whatever the payloads.
 */
export const PRUNE_STEP_BYTES = 2 * 1024 * 1024;

const DAY_MS = 86_400_000;
/** Safe request facts are cut to this length before they are stored. */
const FACT_MAX = 200;

interface Row {
  seq: number;
  webhook_uid: string;
  delivery_id: string;
  outcome: DeliveryOutcome;
  reason: string | null;
  size: number;
  received_at: string;
  sender: string | null;
  content_type: string | null;
  user_agent: string | null;
  has_payload: number;
  secret_version: number | null;
}

/**
 * The entry columns, without the payload itself. Whether there is one is asked without reading it:
 * SQLite's typeof() looks at the record header only (a 250 KB payload stays on its overflow pages),
 * and PostgreSQL's IS NOT NULL at the null bitmap.
 */
const columns = (dialect: StoreContext['dialect']) => `d.seq, d.webhook_uid, d.delivery_id, d.outcome, d.reason, d.size, d.received_at, d.sender,
  d.content_type, d.user_agent, CASE WHEN ${dialect === 'postgres' ? 'd.payload IS NOT NULL' : "typeof(d.payload) = 'blob'"} THEN 1 ELSE 0 END AS has_payload, d.secret_version`;

export type DeliveryStore = ReturnType<typeof createDeliveryStore>;

/** Builds the delivery store (`store.deliveries`) on an open, migrated database. */
export function createDeliveryStore(ctx: Pick<StoreContext, 'db' | 'dialect'>) {
  const db = ctx.db;
  const claims: Claims = ctx.dialect === 'sqlite' ? memoryClaims(db as SqliteDB) : tableClaims(db);
  const COLUMNS = columns(ctx.dialect);
  // The entry's seq: on SQLite the insert's row id (seq is its INTEGER PRIMARY KEY), because RETURNING
  // there keeps the returned row aside until the statement ends and opens a statement journal for
  // it, about 4 µs a delivery (docs/ingress.md#where-a-deliverys-cost-goes-2026-11-29); PostgreSQL
  // has no row id to ask for.
  const insertSql = `INSERT INTO deliveries (webhook_uid, delivery_id, outcome, reason, size, received_at, received_ms, sender, content_type, user_agent, secret_version, payload)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  const insertEntry: (...params: unknown[]) => number =
    ctx.dialect === 'sqlite'
      ? rowIdOf(db.prepare(insertSql))
      : returnedOf(db.prepare(`${insertSql} RETURNING seq`).pluck());
  // A Duplicate keeps no payload (docs/ingress.md#delivery-log).
  const markDuplicate = db.prepare(`UPDATE deliveries SET outcome = 'duplicate', payload = NULL WHERE seq = ?`);
  const listStmt = db.prepare(
    `SELECT ${COLUMNS} FROM deliveries d
     WHERE d.webhook_uid = ? AND d.seq < ? ORDER BY d.seq DESC LIMIT ?`,
  );
  // One id may have several entries (an Accepted one, its Duplicates, earlier rejections):
  // `get` answers the Accepted one when there is one, else the newest. The Accepted one is found
  // through its identity's claim (migration 008), the others through the partial index by id.
  const getEntry = db.prepare(`SELECT ${COLUMNS} FROM deliveries d WHERE d.seq = ?`);
  const getOther = db.prepare(
    `SELECT ${COLUMNS} FROM deliveries d
     WHERE d.webhook_uid = ? AND d.delivery_id = ? AND d.outcome <> 'accepted' ORDER BY d.seq DESC LIMIT 1`,
  );
  const payloadStmt = db.prepare('SELECT payload FROM deliveries WHERE seq = ? AND payload IS NOT NULL');
  const countStmt = db.prepare('SELECT COUNT(*) AS n FROM deliveries WHERE webhook_uid = ?');

  // Upkeep (docs/ingress.md#delivery-log), always in bounded batches along an index, never a scan
  // of the whole log. Retention walks the table in seq order from the oldest entry: seq follows
  // arrival, so the walk can stop at the first entry young enough to keep.
  const oldest = db.prepare('SELECT seq, webhook_uid, received_ms, size FROM deliveries WHERE seq > ? ORDER BY seq LIMIT ?');
  // The seq of a webhook's `keep`-th newest entry: entries below it are outside the newest `keep`.
  const keepBoundary = db.prepare('SELECT seq FROM deliveries WHERE webhook_uid = ? ORDER BY seq DESC LIMIT 1 OFFSET ?').pluck();
  const deleteEntry = db.prepare('DELETE FROM deliveries WHERE seq = ?');
  // Before an entry goes, the runs that read their event payload from it (migration 017) get
  // their own copy; they are among the runs it lists (runs_by_entry), so no scan.
  const copyPayloadToRuns = db.prepare(
    `UPDATE run_attachments SET bytes = (SELECT d.payload FROM deliveries d WHERE d.seq = ?), entry_seq = NULL
     WHERE entry_seq = ? AND run_id IN (SELECT r.run_id FROM runs r WHERE r.delivery_seq = ?)`,
  );
  // The cap on Rejected entries: the oldest beyond the newest `keep` of one webhook, along the
  // partial index of migration 008 (its WHERE clause repeated word for word).
  const trimRejected = db.prepare(
    `DELETE FROM deliveries WHERE seq IN (
       SELECT seq FROM deliveries WHERE webhook_uid = @uid AND outcome NOT IN ('accepted', 'duplicate')
       ORDER BY seq DESC LIMIT @batch OFFSET @keep)`,
  );
  // The next webhook, in UID order, that has Rejected entries (a skip along the same index).
  const nextRejecting = db
    .prepare(`SELECT webhook_uid FROM deliveries WHERE webhook_uid > ? AND outcome NOT IN ('accepted', 'duplicate') ORDER BY webhook_uid LIMIT 1`)
    .pluck();

  // The entry insert's parameters, in its column order. Positional: binding by name looks every
  // name up in an object, a measurable part of a statement this small (docs/ingress.md#a-lighter-write).
  const entryParams = (f: DeliveryFacts, outcome: DeliveryOutcome, reason: string | null, payload: Buffer | null = null): unknown[] => [
    f.webhookUid,
    f.deliveryId,
    outcome,
    reason ?? f.note ?? null,
    f.size,
    iso(f.receivedAt),
    f.receivedAt.getTime(),
    cut(f.sender),
    cut(f.contentType),
    cut(f.userAgent),
    // Only a request that authenticated says which version did.
    outcome === 'accepted' || outcome === 'duplicate' ? (f.secretVersion ?? null) : null,
    payload,
  ];
  const logEntry = (f: DeliveryFacts, outcome: DeliveryOutcome, reason: string | null): number => insertEntry(...entryParams(f, outcome, reason));
  // The Accepted entry and its claim: on SQLite the insert, then the claim in memory and its row;
  // on PostgreSQL one statement for both (claims.ts `entryWithClaim`).
  const withClaim = ctx.dialect === 'postgres' ? entryWithClaim(db, insertSql) : undefined;
  const acceptEntry = (f: DeliveryFacts, payload: Buffer, nowMs: number, cutoffMs: number): { seq: number; claimed: boolean } => {
    const entry = entryParams(f, 'accepted', null, payload);
    if (withClaim) return withClaim(entry, f.webhookUid, f.deliveryId, nowMs, cutoffMs);
    const seq = insertEntry(...entry);
    return { seq, claimed: claims.claim(f.webhookUid, f.deliveryId, nowMs, seq, cutoffMs) };
  };

  // Steps 8 and 9 for one delivery, inside a transaction: the group commit's (store/group-commit.ts
  // `savepointBatch`), or its own (`acceptOrDuplicate`). The entry is logged as Accepted first, so
  // the claim can point at it, with its payload in the same row; the rare Duplicate is then re-marked
  // and its payload dropped. Nothing is read back: the seq comes from the insert itself.
  const acceptRaw = (
    f: DeliveryFacts,
    payload: Buffer,
    identityDays: number,
    onAccepted: readonly ((delivery: AcceptedDelivery) => void)[],
  ): AcceptResult => {
    const nowMs = f.receivedAt.getTime();
    const { seq, claimed } = acceptEntry(f, payload, nowMs, nowMs - identityDays * DAY_MS);
    if (!claimed) {
      markDuplicate.run(seq);
      return { outcome: 'duplicate', seq };
    }
    for (const hook of onAccepted) hook({ ...f, seq, payload });
    return { outcome: 'accepted', seq };
  };
  const acceptOne = db.transaction(acceptRaw);
  const noHooks: readonly ((delivery: AcceptedDelivery) => void)[] = [];
  const writeOne = (item: DeliveryWrite, limits: WriteLimits): WriteResult =>
    item.kind === 'reject'
      ? { outcome: item.outcome, seq: logEntry(item.facts, item.outcome, item.reason) }
      : acceptRaw(item.facts, item.payload, limits.identityDays, item.onAccepted ? [item.onAccepted] : noHooks);

  /**
   * Rejected entries logged per webhook since its last trim. A webhook is trimmed once a tenth of
   * its cap has come in, so between trims it holds at most 10% more than the cap, and a trim costs
   * a walk of the cap's length along the partial index, spread over that many rejections.
   */
  const sinceTrim = new Map<string, number>();
  const trimEvery = (keep: number) => Math.max(1, Math.floor(keep / 10));
  const trim = (uid: string, keep: number): number => {
    sinceTrim.delete(uid);
    return trimRejected.run({ uid, keep, batch: PRUNE_BATCH }).changes;
  };
  const afterWrites = (items: readonly DeliveryWrite[], outcomes: readonly BatchOutcome<WriteResult>[], limits: WriteLimits) => {
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item.kind !== 'reject' || !outcomes[i].ok) continue;
      const uid = item.facts.webhookUid;
      const n = (sinceTrim.get(uid) ?? 0) + 1;
      if (n >= trimEvery(limits.rejectedKeep)) trim(uid, limits.rejectedKeep);
      else sinceTrim.set(uid, n);
    }
  };
  // PostgreSQL: a group commit's entries and claims in one statement (claims.ts
  // `entriesWithClaims`), then its rare Duplicates re-marked in one more, then its hooks, with the
  // meaning of the item-by-item writes: the same identity twice in a batch is Accepted, then
  // Duplicate. The group commit falls back to item by item when any of it throws (a hook, above
  // all), and for a batch of one or one with more than ONE_STATEMENT_BYTES of payloads.
  const allWithClaims = ctx.dialect === 'postgres' ? entriesWithClaims(db) : undefined;
  const markDuplicates = allWithClaims && db.prepare(`UPDATE deliveries SET outcome = 'duplicate', payload = NULL WHERE seq = ANY(?::bigint[])`);
  const inOneStatement = (items: readonly DeliveryWrite[], limits: WriteLimits): WriteResult[] => {
    // Only the first of the batch's entries with one identity is logged as Accepted and claims it;
    // the later ones are Duplicates whatever the claim does (it is either this batch's or older).
    const first = new Set<string>();
    const claiming: boolean[] = [];
    const rows = items.map((item) => {
      const key = `${item.facts.webhookUid}\n${item.facts.deliveryId}`;
      claiming.push(item.kind === 'accept' && !first.has(key));
      if (item.kind === 'reject') return entryParams(item.facts, item.outcome, item.reason);
      if (first.has(key)) return entryParams(item.facts, 'duplicate', null);
      first.add(key);
      return entryParams(item.facts, 'accepted', null, item.payload);
    });
    const written = allWithClaims!(rows[0].map((_, column) => rows.map((row) => row[column])), limits.identityDays * DAY_MS);
    // Logged as Accepted, but a live claim held their identity: Duplicates after all.
    const lost = written.filter((w, k) => claiming[k] && !w.claimed).map((w) => w.seq);
    if (lost.length > 0) markDuplicates!.run(lost);
    return items.map((item, k): WriteResult => {
      const { seq, claimed } = written[k];
      if (item.kind === 'reject') return { outcome: item.outcome, seq };
      if (!claimed) return { outcome: 'duplicate', seq };
      item.onAccepted?.({ ...item.facts, seq, payload: item.payload });
      return { outcome: 'accepted', seq };
    });
  };
  /** Most payload bytes one such statement carries (a bytea array travels as text, twice its size). */
  const ONE_STATEMENT_BYTES = 1024 * 1024;
  const writeAll = savepointBatch(
    db,
    writeOne,
    afterWrites,
    allWithClaims && {
      fits: (items) => items.length > 1 && items.reduce((n, item) => n + (item.kind === 'accept' ? item.payload.length : 0), 0) <= ONE_STATEMENT_BYTES,
      write: inOneStatement,
    },
  );

  // Where the background upkeep stopped: the seq its retention walk reached, and the webhook UID
  // its sweep of Rejected entries reached ('' = from the start).
  let entryCursor = 0;
  let rejectCursor = '';

  /** Retention: up to `budget` of the oldest entries, from the cursor. True when it stopped with work left. */
  const pruneEntries = (cutoffMs: number, keep: number, budget: number): { deleted: number; more: boolean } => {
    const rows = oldest.all(entryCursor, budget) as { seq: number; webhook_uid: string; received_ms: number; size: number }[];
    const boundaries = new Map<string, number>();
    let deleted = 0;
    let bytes = 0;
    for (const row of rows) {
      if (row.received_ms >= cutoffMs) {
        // Young enough to keep, and so is nearly everything after it: the walk starts over next time.
        entryCursor = 0;
        return { deleted, more: false };
      }
      let boundary = boundaries.get(row.webhook_uid);
      if (boundary === undefined) {
        boundary = (keepBoundary.get(row.webhook_uid, keep - 1) as number | undefined) ?? 0;
        boundaries.set(row.webhook_uid, boundary);
      }
      entryCursor = row.seq;
      if (row.seq >= boundary) continue; // among the newest `keep` of its webhook
      const copies = copyPayloadToRuns.run(row.seq, row.seq, row.seq).changes;
      deleted += deleteEntry.run(row.seq).changes;
      bytes += row.size * (1 + copies);
      // The walk goes on from here next step (entryCursor is this entry).
      if (bytes >= PRUNE_STEP_BYTES) return { deleted, more: true };
    }
    if (rows.length < budget) {
      entryCursor = 0;
      return { deleted, more: false };
    }
    return { deleted, more: true };
  };

  /** The cap on Rejected entries, one webhook per call, in UID order from the cursor. */
  const pruneRejected = (keep: number): { deleted: number; more: boolean } => {
    const uid = nextRejecting.get(rejectCursor) as string | undefined;
    if (uid === undefined) {
      rejectCursor = '';
      return { deleted: 0, more: false };
    }
    const deleted = trim(uid, keep);
    // A full batch may leave more of this webhook's excess: stay on it.
    if (deleted < PRUNE_BATCH) rejectCursor = uid;
    return { deleted, more: true };
  };

  const pruneTx = db.transaction((now: Date, limits: PruneLimits, budget: number): PruneStep => {
    const entries = pruneEntries(now.getTime() - limits.days * DAY_MS, limits.keep, budget);
    const identities = claims.prune(now.getTime() - limits.identityDays * DAY_MS, budget);
    const rejected = pruneRejected(limits.rejectedKeep);
    return {
      entries: entries.deleted,
      identities,
      rejected: rejected.deleted,
      more: entries.more || identities === budget || rejected.more,
    };
  });

  // The claims forget what a step pruned only once its transaction committed (claims.ts).
  const pruneStep = (now: Date, limits: PruneLimits, budget: number): PruneStep => {
    let step: PruneStep;
    try {
      step = pruneTx.immediate(now, limits, budget);
    } catch (err) {
      claims.committed(false);
      throw err;
    }
    claims.committed(!db.inTransaction);
    return step;
  };

  return {
    /**
     * Reads, in steps from timers (unref'd: they keep no process alive), what the delivery store
     * needs at open: on SQLite, the claims' index in memory (claims.ts). Until it is read, the
     * first delivery reads the rest itself; `loading` says how far it is, for `/readyz`.
     */
    loadInBackground(): void {
      const step = () => {
        if (db.open && !claims.loadStep()) setTimeout(step, 0).unref();
      };
      setTimeout(step, 0).unref();
    },

    loading: () => claims.loading(),

    /**
     * The ingress's group commit: every write of one event-loop turn, in arrival order, in ONE
     * transaction, with the meaning of one-by-one commits (group-commit.ts `savepointBatch`): an
     * Accepted-or-Duplicate decision as in `acceptBatch`, or a rejected request's entry. Then, in the same transaction, each webhook
     * that got Rejected entries is trimmed to its newest `rejectedKeep` once a tenth of that has
     * come in since its last trim.
     */
    writeBatch(items: readonly DeliveryWrite[], limits: WriteLimits): BatchOutcome<WriteResult>[] {
      return writeAll(items, limits);
    },

    /**
     * Pipeline steps 8 and 9 (docs/ingress.md), inside the caller's transaction: claims the
     * identity (one claim per (webhook_uid, identity), claims.ts); if it was already claimed by an
     * Accepted delivery within `identityDays`, logs a Duplicate; otherwise logs the Accepted entry
     * and its payload and runs the `onAccepted` hooks (run creation, docs/automations.md) in the
     * same transaction. Synchronous: better- sqlite3 has no await inside a transaction, so a hook
     * that throws rolls everything back.
     */
    acceptOrDuplicate(
      f: DeliveryFacts,
      payload: Buffer,
      identityDays: number,
      onAccepted: readonly ((delivery: AcceptedDelivery) => void)[] = [],
    ): AcceptResult {
      return acceptOne.immediate(f, payload, identityDays, onAccepted);
    },

    /**
     * Group commit of steps 8 and 9: `acceptOrDuplicate` for each item, in order, in ONE
     * transaction (one commit, one WAL write), with the meaning of one-by-one commits. Identities
     * are claimed one after the other, so the same identity twice in a batch is Accepted once, then
     * Duplicate, exactly as if they had come one by one. An item that throws (a hook) is rolled
     * back alone and reported as `{ok: false}`; the others commit. Throws, with nothing
     * committed, when the transaction itself fails (BEGIN, COMMIT, or SQLite aborted it).
     */
    acceptBatch(items: readonly AcceptItem[], identityDays: number): BatchOutcome<AcceptResult>[] {
      return writeAll(
        items.map((item) => ({ kind: 'accept', ...item })),
        { identityDays, rejectedKeep: Number.MAX_SAFE_INTEGER },
      ) as BatchOutcome<AcceptResult>[];
    },

    /** Newest first. `before` is a seq cursor (exclusive). */
    list(webhookUid: string, limit: number, before?: number): DeliveryEntry[] {
      return (listStmt.all(webhookUid, before ?? Number.MAX_SAFE_INTEGER, limit) as Row[]).map(toEntry);
    },

    get(webhookUid: string, deliveryId: string): DeliveryEntry | undefined {
      const seq = claims.entryOf(webhookUid, deliveryId);
      const row = ((seq === undefined ? undefined : getEntry.get(seq)) ?? getOther.get(webhookUid, deliveryId)) as Row | undefined;
      return row ? toEntry(row) : undefined;
    },

    /** The exact received bytes of an Accepted entry, or undefined. */
    payload(seq: number): Buffer | undefined {
      return (payloadStmt.get(seq) as { payload: Buffer } | undefined)?.payload;
    },

    count(webhookUid: string): number {
      return (countStmt.get(webhookUid) as { n: number }).n;
    },

    /**
     * One bounded step of the upkeep (docs/ingress.md#delivery-log, docs/ingress.md#identity), in
     * its own short transaction, continuing where the last step stopped: drops up to `budget` of
     * the oldest entries that are both outside the newest `keep` of their webhook and older than
     * `days` (with their payloads), forgets up to `budget` identities older than `identityDays`,
     * and trims one webhook's Rejected entries to the newest `rejectedKeep`. `more` says a next
     * step has work to do.
     */
    pruneStep(now: Date, limits: PruneLimits, budget: number = PRUNE_BATCH): PruneStep {
      return pruneStep(now, limits, budget);
    },

    /**
     * All of the upkeep at once, from the start: `pruneStep` until nothing is left. Returns how
     * many entries (Rejected ones beyond the cap included) and identities went.
     */
    prune(now: Date, limits: PruneLimits): { entries: number; identities: number } {
      entryCursor = 0;
      rejectCursor = '';
      const gone = { entries: 0, identities: 0 };
      for (;;) {
        const step = pruneStep(now, limits, PRUNE_BATCH);
        gone.entries += step.entries + step.rejected;
        gone.identities += step.identities;
        if (!step.more) return gone;
      }
    },
  };
}

/** An insert that answers its row's id: SQLite's row id (an INTEGER PRIMARY KEY is that id). */
function rowIdOf(stmt: Statement): (...params: unknown[]) => number {
  return (...params) => Number(stmt.run(...params).lastInsertRowid);
}

/** An insert that answers what its plucked RETURNING column returns. */
function returnedOf(stmt: Statement): (...params: unknown[]) => number {
  return (...params) => stmt.get(...params) as number;
}

function cut(v: string | undefined): string | null {
  if (v === undefined || v === '') return null;
  return v.length > FACT_MAX ? v.slice(0, FACT_MAX) : v;
}

function toEntry(r: Row): DeliveryEntry {
  return {
    seq: r.seq,
    webhookUid: r.webhook_uid,
    deliveryId: r.delivery_id,
    outcome: r.outcome,
    reason: r.reason,
    size: r.size,
    receivedAt: r.received_at,
    sender: r.sender,
    contentType: r.content_type,
    userAgent: r.user_agent,
    hasPayload: r.has_payload === 1,
    secretVersion: r.secret_version ?? null,
  };
}
