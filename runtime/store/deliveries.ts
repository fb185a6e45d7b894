import type { StoreContext } from './index.ts';
import { savepointBatch, type BatchOutcome } from './group-commit.ts';

/**
 * The delivery log (SPEC 7.4, 7.7): entries, stored payloads of Accepted entries, and accepted
 * identities. The only place with delivery SQL. Statements are prepared once.
 */

export type DeliveryOutcome = 'accepted' | 'duplicate' | 'rejected_auth' | 'rejected_invalid_json' | 'rejected_too_large';

/** The labels of SPEC 7.1, shown by the API, the CLI and the dashboard. */
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
}

/** An Accepted entry as it is handed to `onAccepted` hooks, inside the accepting transaction. */
export interface AcceptedDelivery extends DeliveryFacts {
  seq: number;
  payload: Buffer;
}

export type AcceptResult = { outcome: 'accepted'; seq: number } | { outcome: 'duplicate'; seq: number };

/** One delivery of a group commit (`acceptBatch`). */
export interface AcceptItem {
  facts: DeliveryFacts;
  payload: Buffer;
  /** Called inside the delivery's savepoint when it is Accepted (run creation, SPEC 8). */
  onAccepted?: (delivery: AcceptedDelivery) => void;
}

export interface PruneLimits {
  /** Newest N entries per webhook are always kept. */
  keep: number;
  /** Entries younger than this many days are kept. */
  days: number;
  /** Accepted identities are remembered this many days. */
  identityDays: number;
}

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
}

const COLUMNS = `d.seq, d.webhook_uid, d.delivery_id, d.outcome, d.reason, d.size, d.received_at, d.sender,
  d.content_type, d.user_agent, (p.delivery_seq IS NOT NULL) AS has_payload`;

export type DeliveryStore = ReturnType<typeof createDeliveryStore>;

/** Builds the delivery store (`store.deliveries`) on an open, migrated database. */
export function createDeliveryStore(ctx: Pick<StoreContext, 'db'>) {
  const db = ctx.db;
  const insert = db.prepare(
    `INSERT INTO deliveries (webhook_uid, delivery_id, outcome, reason, size, received_at, received_ms, sender, content_type, user_agent)
     VALUES (@webhookUid, @deliveryId, @outcome, @reason, @size, @receivedAt, @receivedMs, @sender, @contentType, @userAgent)`,
  );
  const insertPayload = db.prepare('INSERT INTO delivery_payloads (delivery_seq, body) VALUES (?, ?)');
  // One statement claims the identity: a new row, or an expired one (older than the cutoff, not
  // yet pruned) taken over. A live Accepted identity changes nothing: the delivery is a Duplicate.
  const claimIdentity = db.prepare(
    `INSERT INTO delivery_identities (webhook_uid, identity, accepted_ms) VALUES (@uid, @identity, @now)
     ON CONFLICT (webhook_uid, identity) DO UPDATE SET accepted_ms = excluded.accepted_ms WHERE accepted_ms < @cutoff`,
  );
  const listStmt = db.prepare(
    `SELECT ${COLUMNS} FROM deliveries d LEFT JOIN delivery_payloads p ON p.delivery_seq = d.seq
     WHERE d.webhook_uid = ? AND d.seq < ? ORDER BY d.seq DESC LIMIT ?`,
  );
  // One id may have several entries (an Accepted one, its Duplicates, earlier rejections):
  // `get` answers the Accepted one when there is one, else the newest.
  const getStmt = db.prepare(
    `SELECT ${COLUMNS} FROM deliveries d LEFT JOIN delivery_payloads p ON p.delivery_seq = d.seq
     WHERE d.webhook_uid = ? AND d.delivery_id = ? ORDER BY (d.outcome = 'accepted') DESC, d.seq DESC LIMIT 1`,
  );
  const payloadStmt = db.prepare('SELECT body FROM delivery_payloads WHERE delivery_seq = ?');
  const countStmt = db.prepare('SELECT COUNT(*) AS n FROM deliveries WHERE webhook_uid = ?');
  const prunePayloads = db.prepare(
    `DELETE FROM delivery_payloads WHERE delivery_seq IN (
       SELECT seq FROM (
         SELECT seq, received_ms, ROW_NUMBER() OVER (PARTITION BY webhook_uid ORDER BY seq DESC) AS rn FROM deliveries
       ) WHERE rn > @keep AND received_ms < @cutoff)`,
  );
  const pruneEntries = db.prepare(
    `DELETE FROM deliveries WHERE seq IN (
       SELECT seq FROM (
         SELECT seq, received_ms, ROW_NUMBER() OVER (PARTITION BY webhook_uid ORDER BY seq DESC) AS rn FROM deliveries
       ) WHERE rn > @keep AND received_ms < @cutoff)`,
  );
  const pruneIdentities = db.prepare('DELETE FROM delivery_identities WHERE accepted_ms < ?');

  const facts = (f: DeliveryFacts, outcome: DeliveryOutcome, reason: string | null) => ({
    webhookUid: f.webhookUid,
    deliveryId: f.deliveryId,
    outcome,
    reason,
    size: f.size,
    receivedAt: f.receivedAt.toISOString(),
    receivedMs: f.receivedAt.getTime(),
    sender: cut(f.sender),
    contentType: cut(f.contentType),
    userAgent: cut(f.userAgent),
  });

  // Steps 8 and 9 for one delivery. Run inside a transaction: on its own (BEGIN IMMEDIATE), or
  // nested in a group commit, where better-sqlite3 makes it a SAVEPOINT of the batch.
  const acceptOne = db.transaction(
    (f: DeliveryFacts, payload: Buffer, identityDays: number, onAccepted: readonly ((delivery: AcceptedDelivery) => void)[]): AcceptResult => {
      const nowMs = f.receivedAt.getTime();
      const cutoff = nowMs - identityDays * DAY_MS;
      const claimed = claimIdentity.run({ uid: f.webhookUid, identity: f.deliveryId, now: nowMs, cutoff }).changes === 1;
      if (!claimed) return { outcome: 'duplicate', seq: Number(insert.run(facts(f, 'duplicate', null)).lastInsertRowid) };
      const seq = Number(insert.run(facts(f, 'accepted', null)).lastInsertRowid);
      insertPayload.run(seq, payload);
      for (const hook of onAccepted) hook({ ...f, seq, payload });
      return { outcome: 'accepted', seq };
    },
  );
  const noHooks: readonly ((delivery: AcceptedDelivery) => void)[] = [];
  const acceptAll = savepointBatch(db, (item: AcceptItem, identityDays: number) =>
    acceptOne(item.facts, item.payload, identityDays, item.onAccepted ? [item.onAccepted] : noHooks),
  );

  return {
    /** Logs a rejected request (auth, invalid JSON, too large). Returns its seq. */
    recordRejected(f: DeliveryFacts, outcome: Exclude<DeliveryOutcome, 'accepted' | 'duplicate'>, reason: string | null): number {
      return Number(insert.run(facts(f, outcome, reason)).lastInsertRowid);
    },

    /**
     * Steps 8 and 9 of SPEC 7.1, inside the caller's transaction: claims the identity under the
     * UNIQUE (webhook_uid, identity) key; if it was already claimed by an Accepted delivery within
     * `identityDays`, logs a Duplicate; otherwise logs the Accepted entry and its payload and runs
     * the `onAccepted` hooks (run creation, SPEC 8) in the same transaction. Synchronous: better-
     * sqlite3 has no await inside a transaction, so a hook that throws rolls everything back.
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
     * transaction (one commit, one WAL write), each item in its own savepoint. Identities are
     * claimed one after the other, so the same identity twice in a batch is Accepted once, then
     * Duplicate, exactly as if they had come one by one. An item that throws (a hook) is rolled
     * back alone and reported as `{ok: false}`; the others commit. Throws, with nothing
     * committed, when the transaction itself fails (BEGIN, COMMIT, or SQLite aborted it).
     */
    acceptBatch(items: readonly AcceptItem[], identityDays: number): BatchOutcome<AcceptResult>[] {
      return acceptAll(items, identityDays);
    },

    /** Newest first. `before` is a seq cursor (exclusive). */
    list(webhookUid: string, limit: number, before?: number): DeliveryEntry[] {
      return (listStmt.all(webhookUid, before ?? Number.MAX_SAFE_INTEGER, limit) as Row[]).map(toEntry);
    },

    get(webhookUid: string, deliveryId: string): DeliveryEntry | undefined {
      const row = getStmt.get(webhookUid, deliveryId) as Row | undefined;
      return row ? toEntry(row) : undefined;
    },

    /** The exact received bytes of an Accepted entry, or undefined. */
    payload(seq: number): Buffer | undefined {
      return (payloadStmt.get(seq) as { body: Buffer } | undefined)?.body;
    },

    count(webhookUid: string): number {
      return (countStmt.get(webhookUid) as { n: number }).n;
    },

    /**
     * Retention (SPEC 7.7, 7.4): drops entries (and their payloads) that are both outside the
     * newest `keep` of their webhook and older than `days`; forgets identities older than
     * `identityDays`. Returns how many entries and identities went.
     */
    prune(now: Date, limits: PruneLimits): { entries: number; identities: number } {
      const cutoff = now.getTime() - limits.days * DAY_MS;
      return db.transaction(() => {
        prunePayloads.run({ keep: limits.keep, cutoff });
        const entries = pruneEntries.run({ keep: limits.keep, cutoff }).changes;
        const identities = pruneIdentities.run(now.getTime() - limits.identityDays * DAY_MS).changes;
        return { entries, identities };
      })();
    },
  };
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
  };
}
