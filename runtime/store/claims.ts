import { halfSipHashLines, halfSipKey } from '../../core/halfsiphash.ts';
import type { DB, SqliteDB } from './db.ts';

/**
 * Accepted identities (docs/ingress.md#identity): the record that makes a second delivery of the
 * same id a Duplicate. Two implementations behind one interface:
 *
 * - PostgreSQL: a table with the `(webhook_uid, identity)` primary key, claimed by one upsert, so
 *   that replicas racing on one identity give exactly one Accepted.
 * - SQLite: a table in arrival order (`delivery_claims`, no index keyed by the identity), found
 *   through an index in memory from a keyed hash of the identity to the rows that have it. A
 *   B-tree keyed by a random id dirties a random page of a large index per delivery, which its
 *   commit writes to the WAL and a checkpoint copies back; an append shares its page with the
 *   claims around it (docs/ingress.md#the-claim-in-arrival-order). Only one process writes a
 *   SQLite database (the runtime's lock on its data dir), so memory can stand in for the UNIQUE key.
 */
export interface Claims {
  /**
   * Claims the identity for the Accepted entry `seq`, inside the caller's transaction: a new
   * claim, or one older than `cutoffMs` taken over. False when a live claim holds it (a Duplicate).
   */
  claim(uid: string, identity: string, nowMs: number, seq: number, cutoffMs: number): boolean;
  /** The seq of the entry that holds the identity's claim, or undefined. */
  entryOf(uid: string, identity: string): number | undefined;
  /**
   * Forgets up to `budget` claims older than `cutoffMs` whose entry left the log, oldest first,
   * inside the caller's transaction; `committed` must follow once that transaction committed.
   */
  prune(cutoffMs: number, budget: number): number;
  /** After the transaction of `prune` committed (or rolled back: `ok` false). */
  committed(ok: boolean): void;
  /**
   * Reads the next part of what the claims need at open (SQLite's index in memory); true once
   * there is nothing left. Any other call reads the rest first, so this only spreads the work.
   */
  loadStep(): boolean;
  /** How far the reading at open is, while there is some left; else undefined. */
  loading(): { loaded: number } | undefined;
}

/**
 * How a claim on PostgreSQL ends: a new row, or an expired one (older than `cutoff`, an SQL
 * expression; not yet pruned) taken over. A live claim changes nothing.
 */
const takeOverExpired = (cutoff: string) => `ON CONFLICT (webhook_uid, identity) DO UPDATE SET accepted_ms = excluded.accepted_ms, seq = excluded.seq
     WHERE delivery_identities.accepted_ms < ${cutoff}`;

/** The claims on PostgreSQL: a UNIQUE key, one upsert per claim. */
export function tableClaims(db: DB): Claims {
  const claimStmt = db.prepare(`INSERT INTO delivery_identities (webhook_uid, identity, accepted_ms, seq) VALUES (?, ?, ?, ?) ${takeOverExpired('?')}`);
  const entryStmt = db.prepare('SELECT seq FROM delivery_identities WHERE webhook_uid = ? AND identity = ?').pluck();
  // A claim outlives its entry (30 days against 7), never the other way round: one whose Accepted
  // entry is still in the log (among the newest 50 of a quiet webhook) stays, as the way to find
  // that entry by id. The claim's cutoff, not this, decides whether it still dedups.
  const pruneStmt = db.prepare(
    `DELETE FROM delivery_identities WHERE (webhook_uid, identity) IN (
       SELECT i.webhook_uid, i.identity FROM delivery_identities i
       WHERE i.accepted_ms < ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = i.seq)
       ORDER BY i.accepted_ms LIMIT ?)`,
  );
  return {
    claim: (uid, identity, nowMs, seq, cutoffMs) => claimStmt.run(uid, identity, nowMs, seq, cutoffMs).changes === 1,
    entryOf: (uid, identity) => (entryStmt.get(uid, identity) as number | null | undefined) ?? undefined,
    prune: (cutoffMs, budget) => pruneStmt.run(cutoffMs, budget).changes,
    committed: () => {},
    loadStep: () => true,
    loading: () => undefined,
  };
}

/**
 * PostgreSQL only: an insert of a log entry (`entrySql`, `INSERT ... VALUES (...)` of one row with
 * the column `seq` generated) and the claim of its identity for it, as `tableClaims`'s `claim`
 * would make it, in ONE statement: each statement is a round trip through the store's bridge, and
 * this one is on the path of every delivery (docs/runtime.md#postgresql). Its parameters: the
 * entry's, then the webhook UID, the identity, the time of the claim and the cutoff. Answers the
 * entry's seq and whether the claim was taken (false: a live claim holds it, a Duplicate).
 */
export function entryWithClaim(db: DB, entrySql: string): (entry: readonly unknown[], uid: string, identity: string, nowMs: number, cutoffMs: number) => { seq: number; claimed: boolean } {
  const stmt = db.prepare(
    `WITH e AS (${entrySql} RETURNING seq),
     c AS (INSERT INTO delivery_identities (webhook_uid, identity, accepted_ms, seq) SELECT ?, ?, ?, e.seq FROM e ${takeOverExpired('?')} RETURNING 1)
     SELECT e.seq, (SELECT COUNT(*) FROM c) AS claimed FROM e`,
  );
  return (entry, uid, identity, nowMs, cutoffMs) => {
    const row = stmt.get(...entry, uid, identity, nowMs, cutoffMs) as { seq: number; claimed: number };
    return { seq: row.seq, claimed: row.claimed === 1 };
  };
}

/** A group commit's log entries as columns, each an array with one value per entry in arrival order (`entriesWithClaims`). */
export type EntryColumns = readonly (readonly unknown[])[];

/**
 * PostgreSQL only: every log entry of a group commit, in arrival order, and the claims of its
 * entries logged as Accepted, in ONE statement: a round trip through the store's bridge per batch
 * instead of one per delivery (docs/runtime.md#postgresql). `columns` are the entry insert's twelve
 * columns (`entrySql`'s order), as arrays. The entries' seqs are drawn from the log's sequence and
 * handed out in ascending order to the entries in arrival order, so the log's order is the
 * arrival order, whatever order PostgreSQL runs the insert in. The Accepted entries must have
 * distinct identities (a claim per identity and statement). A claim is taken as `tableClaims`'s
 * `claim` takes it, the cutoff being each entry's time less `identityMs`. Answers, in arrival
 * order, each entry's seq and whether its claim was taken (always false for entries not logged as
 * Accepted).
 */
export function entriesWithClaims(db: DB): (columns: EntryColumns, identityMs: number) => { seq: number; claimed: boolean }[] {
  const stmt = db.prepare(
    `WITH i AS (
       SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bytea[])
         WITH ORDINALITY AS t(webhook_uid, delivery_id, outcome, reason, size, received_at, received_ms, sender, content_type, user_agent, secret_version, payload, ord)
     ),
     drawn AS (SELECT nextval(pg_get_serial_sequence('deliveries', 'seq')) AS seq FROM i),
     numbered AS (SELECT seq, row_number() OVER (ORDER BY seq) AS ord FROM drawn),
     e AS (
       INSERT INTO deliveries (seq, webhook_uid, delivery_id, outcome, reason, size, received_at, received_ms, sender, content_type, user_agent, secret_version, payload)
       SELECT n.seq, i.webhook_uid, i.delivery_id, i.outcome, i.reason, i.size, i.received_at, i.received_ms, i.sender, i.content_type, i.user_agent, i.secret_version, i.payload
       FROM i JOIN numbered n ON n.ord = i.ord
       RETURNING seq, webhook_uid, delivery_id, outcome, received_ms
     ),
     c AS (
       INSERT INTO delivery_identities (webhook_uid, identity, accepted_ms, seq)
       SELECT webhook_uid, delivery_id, received_ms, seq FROM e WHERE outcome = 'accepted'
       -- In key order: two replicas' batches that share identities wait on each other's claims in
       -- the same order, and do not deadlock on them.
       ORDER BY webhook_uid, delivery_id
       ${takeOverExpired('excluded.accepted_ms - ?')}
       RETURNING seq
     )
     SELECT e.seq, EXISTS (SELECT 1 FROM c WHERE c.seq = e.seq) AS claimed FROM e ORDER BY e.seq`,
  );
  return (columns, identityMs) => (stmt.all(...columns, identityMs) as { seq: number; claimed: boolean }[]).map((r) => ({ seq: r.seq, claimed: r.claimed === true }));
}

/** Hashes fit a small integer, so the index's keys and most values take no memory of their own. */
const HASH_MASK = 0x3fffffff;

/**
 * The claims on SQLite: rows in arrival order, and in memory, for each hash, the ids of the rows
 * that have it. Every claim's (id, hash) is read once after open, in steps (`loadStep`).
 *
 * The index may hold more than the table, never less, and every lookup reads the rows it points
 * at and compares the identity itself:
 * - a claim rolled back with its transaction leaves its id in the index; the row is gone (or, its
 *   id reused, holds another identity), so the lookup passes over it;
 * - a pruned claim leaves the index only once its deletion committed (`committed`), so a prune
 *   rolled back never leaves a live claim out of it.
 * The hash (HalfSipHash, core/halfsiphash.ts) is keyed with a random key of the database's own
 * (migration 020), so a sender cannot choose ids that share one and make each lookup read many
 * rows. `mask` is narrower only in tests, which make every identity share its hash with others.
 */
export function memoryClaims(db: SqliteDB, mask: number = HASH_MASK): Claims {
  // The database's 16 random bytes, folded to HalfSipHash's 8 (migration 022).
  const stored = db.prepare('SELECT key FROM delivery_claim_key').pluck().get() as Buffer;
  const key = halfSipKey(stored.subarray(0, 8).map((byte, i) => byte ^ stored[8 + i]));
  // The uid is an id of ours and has no newline: uid and identity cannot be confused.
  const hashOf = (uid: string, identity: string): number => halfSipHashLines(key, uid, identity) & mask;

  const rowStmt = db.prepare('SELECT webhook_uid, identity, accepted_ms, seq FROM delivery_claims WHERE id = ?').raw();
  const insertStmt = db.prepare('INSERT INTO delivery_claims (webhook_uid, identity, accepted_ms, seq, hash) VALUES (?, ?, ?, ?, ?)');
  const takeOverStmt = db.prepare('UPDATE delivery_claims SET accepted_ms = ?, seq = ? WHERE id = ?');
  const pruneStmt = db
    .prepare(
      `DELETE FROM delivery_claims WHERE id IN (
         SELECT c.id FROM delivery_claims c
         WHERE c.accepted_ms < ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = c.seq)
         ORDER BY c.accepted_ms LIMIT ?)
       RETURNING id, hash`,
    )
    .raw();

  const index = new ClaimIndex();

  /** The row of the identity's claim: [id, accepted_ms, seq], or undefined. */
  const find = (h: number, uid: string, identity: string): [number, number, number | null] | undefined => {
    for (let slot = index.first(h); slot >= 0; slot = index.next(h, slot)) {
      const id = index.idAt(slot);
      const row = rowStmt.get(id) as [string, string, number, number | null] | undefined;
      if (row !== undefined && row[0] === uid && row[1] === identity) return [id, row[2], row[3]];
    }
    return undefined;
  };

  // Every claim, once, read in chunks as two texts (ids, hashes): SQLite hands a row to
  // JavaScript for about a microsecond, a number in a text for a tenth of that. The chunks are read
  // by `loadStep` (the store calls it from timers after opening, so the runtime answers its health
  // checks meanwhile) or all at once by the first claim or lookup that needs them.
  const chunk = db.prepare(
    `SELECT max(id), group_concat(id), group_concat(hash) FROM (
       SELECT id, hash FROM delivery_claims WHERE id > ? AND hash IS NOT NULL ORDER BY id LIMIT ?)`,
  ).raw();
  // Rows written before migration 020 have no hash yet: they get theirs after the others are read,
  // in steps too (a database upgraded with a million claims would otherwise hold the event loop
  // for seconds), each step in a transaction of its own, or a savepoint of the caller's.
  const unhashedStmt = db.prepare('SELECT id, webhook_uid, identity FROM delivery_claims WHERE id > ? AND hash IS NULL ORDER BY id LIMIT ?').raw();
  const setHash = db.prepare('UPDATE delivery_claims SET hash = ? WHERE id = ?');
  const fill = db.transaction((rows: [number, string, string][]) => {
    for (const [id, uid, identity] of rows) {
      const h = hashOf(uid, identity);
      setHash.run(h, id);
      index.add(h, id);
    }
  });
  let after = 0;
  let hashedRead = false;
  let unhashedAfter = 0;
  let loaded = false;
  const loadStep = (rows: number): boolean => {
    if (loaded) return true;
    if (!hashedRead) {
      const [last, ids, hashes] = chunk.get(after, rows) as [number | null, string | null, string | null];
      if (last !== null && ids !== null && hashes !== null) {
        index.load(ids, hashes);
        after = last;
        return false;
      }
      hashedRead = true;
    }
    const unhashed = unhashedStmt.all(unhashedAfter, rows) as [number, string, string][];
    if (unhashed.length > 0) {
      if (db.inTransaction) fill(unhashed);
      else fill.immediate(unhashed);
      unhashedAfter = unhashed[unhashed.length - 1][0];
      return false;
    }
    loaded = true;
    return true;
  };
  const ensureLoaded = (): void => {
    while (!loaded) loadStep(LOAD_CHUNK);
  };

  let pruned: [number, number | null][] = [];
  return {
    claim(uid, identity, nowMs, seq, cutoffMs) {
      ensureLoaded();
      const h = hashOf(uid, identity);
      const found = find(h, uid, identity);
      if (found === undefined) {
        index.add(h, Number(insertStmt.run(uid, identity, nowMs, seq, h).lastInsertRowid));
        return true;
      }
      if (found[1] >= cutoffMs) return false;
      takeOverStmt.run(nowMs, seq, found[0]);
      return true;
    },
    entryOf(uid, identity) {
      ensureLoaded();
      return find(hashOf(uid, identity), uid, identity)?.[2] ?? undefined;
    },
    // A prune needs no index: a row it deletes that is not read yet never will be, and one that
    // was read leaves the index once the deletion committed.
    prune(cutoffMs, budget) {
      const gone = pruneStmt.all(cutoffMs, budget) as [number, number | null][];
      pruned = pruned.concat(gone);
      return gone.length;
    },
    committed(ok) {
      // A claim pruned before it got its hash was never in the index.
      if (ok) for (const [id, h] of pruned) if (h !== null) index.remove(h, id);
      pruned = [];
    },
    loadStep: () => loadStep(LOAD_STEP),
    loading: () => (loaded ? undefined : { loaded: index.size }),
  };
}

/** Claims read per statement when they are needed at once: two texts of about 1.5 MB. */
const LOAD_CHUNK = 100_000;
/** Claims read per background step: about 10 ms of the event loop on a slow machine. */
const LOAD_STEP = 10_000;

/**
 * The index in memory: an open-addressing table from hash to row id, on typed arrays (about 24
 * bytes a claim, nothing for the garbage collector to walk). A hash may be in several slots, one
 * per row that has it; a lookup walks from the hash's home slot to the first empty one. A removed
 * slot becomes a tombstone, which the next resize drops.
 */
export class ClaimIndex {
  /** 0 empty, -1 removed, else hash + 1. */
  private keys = new Int32Array(1024);
  private ids = new Float64Array(1024);
  private mask = 1023;
  /** Slots holding a claim, and slots no longer empty (claims and tombstones). */
  private live = 0;
  private used = 0;

  get size(): number {
    return this.live;
  }

  add(h: number, id: number): void {
    for (let s = this.first(h); s >= 0; s = this.next(h, s)) if (this.ids[s] === id) return;
    this.put(h, id);
  }

  /**
   * Adds the claims of two comma-separated texts of the same length in numbers: row ids, and their
   * hashes. Parsed by hand, without an array of strings. The ids are new to the index.
   */
  load(ids: string, hashes: string): void {
    let j = 0;
    for (let i = 0; i < ids.length; i++) {
      let id = 0;
      for (let c = ids.charCodeAt(i); c !== 44 && i < ids.length; c = ids.charCodeAt(++i)) id = id * 10 + (c - 48);
      let h = 0;
      for (let c = hashes.charCodeAt(j); c !== 44 && j < hashes.length; c = hashes.charCodeAt(++j)) h = h * 10 + (c - 48);
      j++;
      this.put(h, id);
    }
  }

  private put(h: number, id: number): void {
    if ((this.used + 1) * 4 > this.keys.length * 3) this.resize();
    let s = h & this.mask;
    while (this.keys[s] > 0) s = (s + 1) & this.mask;
    if (this.keys[s] === 0) this.used++;
    this.keys[s] = h + 1;
    this.ids[s] = id;
    this.live++;
  }

  remove(h: number, id: number): void {
    for (let s = this.first(h); s >= 0; s = this.next(h, s)) {
      if (this.ids[s] !== id) continue;
      this.keys[s] = -1;
      this.live--;
      return;
    }
  }

  /** The first slot holding `h`, or -1. */
  first(h: number): number {
    return this.scan(h, h & this.mask);
  }

  /** The slot after `slot` holding `h`, or -1. */
  next(h: number, slot: number): number {
    return this.scan(h, (slot + 1) & this.mask);
  }

  idAt(slot: number): number {
    return this.ids[slot];
  }

  private scan(h: number, from: number): number {
    const key = h + 1;
    for (let s = from; ; s = (s + 1) & this.mask) {
      const k = this.keys[s];
      if (k === 0) return -1;
      if (k === key) return s;
    }
  }

  /** Twice the room when more than half the slots hold claims, else the same room without tombstones. */
  private resize(): void {
    const keys = this.keys;
    const ids = this.ids;
    const size = this.live * 2 >= keys.length ? keys.length * 2 : keys.length;
    this.keys = new Int32Array(size);
    this.ids = new Float64Array(size);
    this.mask = size - 1;
    this.live = 0;
    this.used = 0;
    for (let s = 0; s < keys.length; s++) {
      if (keys[s] <= 0) continue;
      let t = (keys[s] - 1) & this.mask;
      while (this.keys[t] !== 0) t = (t + 1) & this.mask;
      this.keys[t] = keys[s];
      this.ids[t] = ids[s];
      this.live++;
      this.used++;
    }
  }
}
