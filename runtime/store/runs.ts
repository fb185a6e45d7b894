import { sha256Hex } from '../../core/canonical-json.ts';
import { conflict } from '../../core/errors.ts';
import { newSortableId } from '../../core/ids.ts';
import { sourcesOf, type RunState } from '../../core/run-state.ts';
import { iso } from '../clock.ts';
import { open as openSealed, seal } from '../crypto.ts';
import { savepointBatch, type BatchOutcome } from './group-commit.ts';
import type { StoreContext } from './index.ts';
import type { Statement, Transaction } from './db.ts';

/** SCHEDULE: started by a schedule trigger; stored as API with `schedule` set (migration 009). */
export type RunSource = 'API' | 'WEBHOOK' | 'SCHEDULE';

/** The schedule that started a run, in Oz's names (RunItem.schedule). */
export interface RunSchedule {
  schedule_id: string;
  schedule_name: string;
  cron_schedule: string;
  /** This runtime's own: the time the schedule was due (the first, when missed ones were collapsed). */
  scheduled_for?: string;
}
export type CreatorType = 'user' | 'agent' | 'automation';
export type FinalState = 'SUCCEEDED' | 'FAILED' | 'ERROR' | 'CANCELLED';

/** A run as the API shows it (docs/api.md), except `session_link`, which needs the base URL. */
export interface RunRecord {
  run_id: string;
  state: RunState;
  title: string | null;
  prompt: string;
  config: { environment_id: string };
  source: RunSource;
  creator: { type: CreatorType; name: string };
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  status_message: string | null;
  error_code: string | null;
  retryable: boolean | null;
  attachments: { name: string; size: number; sha256: string }[];
  metadata: Record<string, unknown> | null;
  factory: string | null;
  automation: string | null;
  webhook_uid: string | null;
  delivery_id: string | null;
  /** Oz's names for the recorded Oz fields (docs/api.md#oz-compatibility); present only when given. */
  agent_config?: Record<string, unknown>;
  agent_skill?: { name: string };
  conversation_id?: string;
  /** The schedule that started the run (source SCHEDULE). */
  schedule?: RunSchedule;
  /** The FAILED or ERROR run this one retries (docs/api.md#retry). */
  retry_of?: string;
  /** The delivery this run is a replay of, and who replayed it (docs/ingress.md#replay). */
  replay_of?: RunReplay;
  /** Where the run reports its state changes (docs/api.md#run-notifications); never the secret. */
  webhook?: { url: string; secret_name?: string };
}

/** A replayed delivery, as a run shows it. */
export interface RunReplay {
  webhook_uid: string;
  delivery_id: string;
  by: { type: CreatorType; name: string };
  at: string;
}

/** Where a run reports its state changes: a secret given (or generated), or a team secret's name. */
export interface RunNotify {
  url: string;
  secret?: string;
  secretName?: string;
}

/** A notification of the outbox (docs/api.md#run-notifications). */
export interface RunNotification {
  seq: number;
  run_id: string;
  message_id: string;
  state: RunState;
  status: 'pending' | 'delivered' | 'failed';
  attempts: { attempt: number; at: string; status_code: number | null; error: string | null }[];
  next_attempt_at: string | null;
  created_at: string;
}

/** A notification due for an attempt: what the sender needs. */
export interface DueNotification {
  seq: number;
  runId: string;
  messageId: string;
  attempts: number;
  run: RunRecord;
  notify: RunNotify;
  createdAt: string;
}

/** Oz request fields recorded as given: `config` without environment_id, skill, team, conversation_id. */
export interface OzFields {
  config?: Record<string, unknown>;
  skill?: string;
  team?: boolean;
  conversation_id?: string;
}

/** The Idempotency-Key of a create (docs/api.md), per API key. */
export interface RunIdempotency {
  keyId: string;
  key: string;
  requestHash: string;
}

/** One creation of a group commit: a run, under an Idempotency-Key or not. */
export interface NewRunItem {
  input: NewRun;
  idem?: RunIdempotency;
}

/** Inputs of a run that the caller has already validated. */
export interface NewRun {
  prompt: string;
  environmentId: string;
  title?: string | null;
  metadata?: Record<string, unknown> | null;
  source: RunSource;
  creator: { type: CreatorType; name: string };
  factory?: string | null;
  automation?: string | null;
  webhookUid?: string | null;
  deliveryId?: string | null;
  /** The seq of the Accepted log entry of that delivery: the entry lists the run (docs/ingress.md#delivery-log). */
  deliverySeq?: number | null;
  /**
   * `inEntry`: the bytes are the payload stored in the run's own log entry (`deliverySeq`), which
   * is read instead of a copy while the entry is kept (migration 017, docs/automations.md#the-event-payload).
   * Only for an entry written in the same transaction: the log's retention cannot have deleted it
   * yet, and copies the bytes in when it does.
   */
  attachments?: { name: string; bytes: Buffer; inEntry?: boolean }[];
  oz?: OzFields | null;
  schedule?: RunSchedule;
  retryOf?: string | null;
  /** With webhookUid and deliveryId: the replayed delivery. */
  replay?: { by: { type: CreatorType; name: string } } | null;
  notify?: RunNotify | null;
}

/** A run of a delivery, as its log entry shows it; `replay` when it was started by a replay. */
export interface DeliveryRun {
  run_id: string;
  automation: string | null;
  state: RunState;
  replay?: Pick<RunReplay, 'by' | 'at'>;
}

/** A run's notify as stored: the secret sealed with the master key. */
interface StoredNotify {
  url: string;
  secret_sealed?: string;
  secret_name?: string;
}

const webhookOf = (n: StoredNotify): { url: string; secret_name?: string } => ({ url: n.url, ...(n.secret_name !== undefined ? { secret_name: n.secret_name } : {}) });

export interface TranscriptEvent {
  seq: number;
  time: string;
  type: string;
  data: Record<string, unknown>;
}

export interface RunListQuery {
  limit: number;
  cursor?: RunCursor;
  states?: RunState[];
  environmentId?: string;
  source?: RunSource;
  factory?: string;
  automation?: string;
  /** Exclusive bounds, RFC 3339 UTC as stored. */
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  /** Exact creator name (the key's or the automation's). */
  creator?: string;
  /** Substring, any case, of the title, the prompt or the skill. */
  q?: string;
  /** Recorded Oz fields: config.name, config.model_id, skill or config.skill_spec. */
  configName?: string;
  modelId?: string;
  skill?: string;
  /** The schedule that started the run (`schedule.schedule_id`), retries of such runs included. */
  scheduleId?: string;
  /** Only runs that belong to one of these factories (a factory-limited key's list); undefined for all. */
  owners?: readonly string[];
  /** True when a filter can match no run here (an Oz state or source this runtime never has). */
  none?: boolean;
  sortBy?: RunSortKey;
  sortOrder?: 'asc' | 'desc';
}

export type RunSortKey = 'created_at' | 'updated_at';

/** A position in the list: the last run of a page, in the order the page was sorted by. */
export interface RunCursor {
  /** The sort key's value (created_at unless the cursor says otherwise). */
  createdAt: string;
  seq: number;
  sortBy?: RunSortKey;
  sortOrder?: 'asc' | 'desc';
}

export interface FinishInput {
  statusMessage?: string;
  errorCode?: string;
  retryable?: boolean;
}

/** The bytes column of an attachment kept in its log entry (NOT NULL, so empty). */
const NO_BYTES = Buffer.alloc(0);

/** Thrown (and caught) when a concurrent create took the same Idempotency-Key first. */
const IDEMPOTENCY_RACE = new Error('the Idempotency-Key was taken by a concurrent create');

/** Idempotency keys are remembered this long (docs/api.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

interface Row {
  seq: number;
  run_id: string;
  state: RunState;
  title: string | null;
  prompt: string;
  environment_id: string;
  source: RunSource;
  creator_type: CreatorType;
  creator_name: string;
  factory: string | null;
  automation: string | null;
  webhook_uid: string | null;
  delivery_id: string | null;
  metadata: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  status_message: string | null;
  error_code: string | null;
  retryable: number | null;
  oz: string | null;
  schedule: string | null;
  retry_of: string | null;
  replay: string | null;
  notify: string | null;
}

/**
 * A QUEUED run. Its owner, the factory it belongs to (migration 023): its automation's (the
 * first of the last two parameters), else the factory that defines its environment (the last)
 * when it is created, read in the same statement.
 */
const insertSql = `INSERT INTO runs (run_id, state, title, prompt, environment_id, source, creator_type, creator_name,
  factory, automation, webhook_uid, delivery_id, delivery_seq, metadata, oz, schedule, retry_of, replay, notify, created_at, updated_at, owner)
  VALUES (?, 'QUEUED', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, (SELECT e.factory FROM environments e WHERE e.name = ?)))`;

const COLUMNS = `seq, run_id, state, title, prompt, environment_id, source, creator_type, creator_name, factory,
  automation, webhook_uid, delivery_id, metadata, created_at, updated_at, started_at, finished_at, status_message,
  error_code, retryable, oz, schedule, retry_of, replay, notify`;

/**
 * The `schedule_id` of a scheduled run's `schedule` (JSON text), as the runs_by_schedule index
 * (migration 019) spells it: a query must use this very expression for the index to serve it.
 */
function scheduleIdOf(dialect: 'sqlite' | 'postgres'): string {
  return dialect === 'postgres' ? "((schedule::jsonb) ->> 'schedule_id')" : "json_extract(schedule, '$.schedule_id')";
}

/** "This run was started by the schedule `?`": the partial index's condition and its key, as one predicate. */
export function bySchedule(dialect: 'sqlite' | 'postgres'): string {
  return `schedule IS NOT NULL AND ${scheduleIdOf(dialect)} = ?`;
}

/**
 * The cursor is opaque to clients: base64url of `<created_at>|<seq>` for the default order (newest
 * created first), `<value>|<seq>|<sort_by>|<sort_order>` for another.
 */
export function encodeCursor(c: RunCursor): string {
  const sorted = c.sortBy && (c.sortBy !== 'created_at' || c.sortOrder === 'asc') ? `|${c.sortBy}|${c.sortOrder ?? 'desc'}` : '';
  return Buffer.from(`${c.createdAt}|${c.seq}${sorted}`, 'utf8').toString('base64url');
}

/** The cursor's position, or undefined when `text` is not a cursor this runtime made. */
export function decodeCursor(text: string): RunCursor | undefined {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\|(\d{1,15})(?:\|(created_at|updated_at)\|(asc|desc))?$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
  if (!m) return undefined;
  return m[3] ? { createdAt: m[1], seq: Number(m[2]), sortBy: m[3] as RunSortKey, sortOrder: m[4] as 'asc' | 'desc' } : { createdAt: m[1], seq: Number(m[2]) };
}

/** The statements of one claimer's claim (RunStore `claimStatements`). */
interface ClaimStatements {
  fair: Statement;
  /** PostgreSQL: the oldest run no other replica holds, when the fair choice was just taken. */
  taken: Statement | undefined;
}

/**
 * The run a claim takes (docs/runs.md#the-pool), as a scalar subquery: each factory that has QUEUED
 * runs ('' for runs of none) is found by a skip along the runs_queued_by_owner index (the smallest
 * key above the last one, one index seek per factory, never a walk of the queue), with its oldest
 * QUEUED run and its count of runs INPROGRESS; the factory with the fewest goes first, the oldest
 * run on a tie. Every expression is the index's own, word for word, so the planner uses it.
 */
export function fairNext(dialect: StoreContext['dialect'], owners?: number): string {
  // SQLite's planner, without statistics, would rather walk the queue along runs_state_created (state
  // is its first column too): told which index to use. PostgreSQL keeps statistics of its own.
  const queue = (alias = '') => `runs${alias ? ` ${alias}` : ''}${dialect === 'sqlite' ? ' INDEXED BY runs_queued_by_owner' : ''}`;
  // A claimer limited to some factories (a worker's key, docs/runtime.md#factory-limited-keys) names
  // them: those are the factories taking turns, each one's head found the same way.
  const listed = owners === undefined ? undefined : Array.from({ length: owners }, () => '(?)').join(', ');
  return `WITH RECURSIVE owners(o) AS (
    ${
      listed !== undefined
        ? `SELECT column1 FROM (VALUES ${listed}) AS listed`
        : `SELECT MIN(COALESCE(owner, '')) FROM ${queue()} WHERE state = 'QUEUED'
    UNION ALL
    SELECT (SELECT MIN(COALESCE(owner, '')) FROM ${queue()} WHERE state = 'QUEUED' AND COALESCE(owner, '') > owners.o) FROM owners WHERE owners.o IS NOT NULL`
    }
  ), heads AS (
    SELECT (SELECT h.run_id FROM ${queue('h')} WHERE h.state = 'QUEUED' AND COALESCE(h.owner, '') = owners.o ORDER BY h.created_at, h.seq LIMIT 1) AS run_id,
      (SELECT COUNT(*) FROM runs b WHERE b.state = 'INPROGRESS' AND COALESCE(b.owner, '') = owners.o) AS busy
    FROM owners WHERE owners.o IS NOT NULL
  )
  SELECT heads.run_id FROM heads JOIN runs r ON r.run_id = heads.run_id ORDER BY heads.busy, r.created_at, r.seq LIMIT 1`;
}

/**
 * Runs, their attachments and transcripts (docs/api.md, docs/runs.md). Every state change is one
 * conditional UPDATE guarded by core/run-state.ts and writes its `state` transcript event in the
 * same transaction, so the transcript's state events are written here and nowhere else.
 */
export class RunStore {
  private readonly ctx: StoreContext;
  private readonly stmts;
  /** finish()'s UPDATE for each final state (its IN list depends on the state), prepared on first use. */
  private readonly finishStmts = new Map<FinalState, Statement>();
  /**
   * `claimNext`'s statements, by the claimer's list of factories ('' for a claimer of any run, the
   * pool's): few lists, one per worker key limited to some factories.
   */
  private readonly claims = new Map<string, ClaimStatements>();
  private readonly createOne: Transaction<(item: NewRunItem & { idem: RunIdempotency }) => { run: RunRecord; created: boolean }>;
  private readonly createAll: (items: readonly NewRunItem[]) => BatchOutcome<{ run: RunRecord; created: boolean }>[];

  constructor(ctx: StoreContext) {
    this.ctx = ctx;
    const db = ctx.db;
    this.stmts = {
      insert: db.prepare(insertSql),
      // PostgreSQL: the insert answers the row itself, one round trip through the bridge less than
      // an insert and a read (SQLite reads it back: RETURNING costs it a statement journal).
      insertReturning: ctx.dialect === 'postgres' ? db.prepare(`${insertSql} RETURNING ${COLUMNS}`) : undefined,
      owner: db.prepare('SELECT owner FROM runs WHERE run_id = ?').pluck(),
      insertAttachment: db.prepare('INSERT INTO run_attachments (run_id, name, bytes, size, sha256, entry_seq) VALUES (?, ?, ?, ?, ?, ?)'),
      get: db.prepare(`SELECT ${COLUMNS} FROM runs WHERE run_id = ?`),
      attachmentMeta: db.prepare('SELECT name, size, sha256 FROM run_attachments WHERE run_id = ? ORDER BY name'),
      // An attachment kept in its run's log entry is read from there (`entry` is that entry's seq
      // when it still holds a payload, to tell a missing one from an empty one).
      attachmentBytes: db.prepare(`SELECT a.name, a.entry_seq, d.seq AS entry, CASE WHEN a.entry_seq IS NULL THEN a.bytes ELSE d.payload END AS bytes
        FROM run_attachments a LEFT JOIN deliveries d ON d.seq = a.entry_seq AND d.payload IS NOT NULL
        WHERE a.run_id = ? ORDER BY a.name`),
      nextEventSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM run_events WHERE run_id = ?'),
      insertEvent: db.prepare('INSERT INTO run_events (run_id, seq, time, type, data) VALUES (?, ?, ?, ?, ?)'),
      events: db.prepare('SELECT seq, time, type, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      inProgress: db.prepare(`SELECT run_id FROM runs WHERE state = 'INPROGRESS' ORDER BY created_at, seq`),
      idemGet: db.prepare('SELECT request_hash, run_id, created_at FROM run_idempotency WHERE key_id = ? AND idempotency_key = ?'),
      idemDelete: db.prepare('DELETE FROM run_idempotency WHERE key_id = ? AND idempotency_key = ?'),
      idemInsert: db.prepare(`INSERT INTO run_idempotency (key_id, idempotency_key, request_hash, run_id, created_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (key_id, idempotency_key) DO NOTHING`),
      idemPrune: db.prepare('DELETE FROM run_idempotency WHERE created_at < ?'),
      workspacesDue: db.prepare(`SELECT run_id FROM runs
        WHERE finished_at IS NOT NULL AND finished_at < ? AND workspace_removed_at IS NULL AND started_at IS NOT NULL
        ORDER BY finished_at LIMIT ?`),
      workspaceRemoved: db.prepare('UPDATE runs SET workspace_removed_at = ? WHERE run_id = ?'),
      countByState: db.prepare('SELECT state, COUNT(*) AS n FROM runs GROUP BY state'),
      groupInsert: db.prepare(`INSERT INTO run_process_groups (run_id, pgid, started_at) VALUES (?, ?, ?)
        ON CONFLICT (run_id, pgid) DO UPDATE SET started_at = excluded.started_at`),
      groupDelete: db.prepare('DELETE FROM run_process_groups WHERE run_id = ? AND pgid = ?'),
      groupsOf: db.prepare('SELECT pgid FROM run_process_groups WHERE run_id = ? ORDER BY started_at, pgid'),
      groupsClear: db.prepare('DELETE FROM run_process_groups WHERE run_id = ?'),
      byEntry: db.prepare('SELECT run_id, automation, state, replay FROM runs WHERE delivery_seq = ? ORDER BY seq'),
      entryOf: db.prepare('SELECT delivery_seq FROM runs WHERE run_id = ?'),
      notifyOf: db.prepare('SELECT run_id, notify FROM runs WHERE run_id = ?'),
      enqueue: db.prepare(`INSERT INTO run_notifications (run_id, message_id, state, run, status, attempts, next_ms, created_at)
        VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`),
      // PostgreSQL: rows another replica is taking right now are skipped, not waited for.
      due: db.prepare(`SELECT n.seq, n.run_id, n.message_id, n.attempts, n.run, n.created_at, r.notify FROM run_notifications n
        JOIN runs r ON r.run_id = n.run_id WHERE n.status = 'pending' AND n.next_ms <= ? ORDER BY n.next_ms, n.seq LIMIT ?${ctx.dialect === 'postgres' ? ' FOR UPDATE OF n SKIP LOCKED' : ''}`),
      hold: db.prepare('UPDATE run_notifications SET next_ms = ? WHERE seq = ? AND status = \'pending\''),
      nextDue: db.prepare(`SELECT MIN(next_ms) AS ms FROM run_notifications WHERE status = 'pending' AND next_ms > ?`),
      recordAttempt: db.prepare('INSERT INTO run_notification_attempts (notification_seq, attempt, at, status_code, error) VALUES (?, ?, ?, ?, ?)'),
      settle: db.prepare('UPDATE run_notifications SET status = ?, attempts = ?, next_ms = ? WHERE seq = ? AND status = \'pending\''),
      notificationsOf: db.prepare('SELECT seq, run_id, message_id, state, status, next_ms, created_at FROM run_notifications WHERE run_id = ? ORDER BY seq'),
      attemptsOf: db.prepare(`SELECT a.notification_seq, a.attempt, a.at, a.status_code, a.error FROM run_notification_attempts a
        JOIN run_notifications n ON n.seq = a.notification_seq WHERE n.run_id = ? ORDER BY a.notification_seq, a.attempt`),
    };
    // One item of `createBatch` with an Idempotency-Key, in its own savepoint.
    this.createOne = db.transaction(({ input, idem }: NewRunItem & { idem: RunIdempotency }): { run: RunRecord; created: boolean } => {
      const nowDate = this.ctx.clock.now();
      const seen = this.stmts.idemGet.get(idem.keyId, idem.key) as { request_hash: string; run_id: string; created_at: string } | undefined;
      if (seen && Date.parse(seen.created_at) > nowDate.getTime() - IDEMPOTENCY_TTL_MS) {
        if (seen.request_hash !== idem.requestHash) {
          throw conflict('This Idempotency-Key was already used with a different request body within the last 24 hours.');
        }
        const run = this.get(seen.run_id);
        if (run) return { run, created: false };
      }
      if (seen) this.stmts.idemDelete.run(idem.keyId, idem.key);
      const run = this.createInTx([input])[0];
      // Another replica on the same PostgreSQL database took the key since we looked: undo this
      // run (the savepoint) and answer as that replica's create did (docs/runtime.md#postgresql).
      if (this.stmts.idemInsert.run(idem.keyId, idem.key, idem.requestHash, run.run_id, iso(nowDate)).changes === 0) throw IDEMPOTENCY_RACE;
      return { run, created: true };
    });

    this.createAll = savepointBatch(db, (item: NewRunItem) => {
      // Without an Idempotency-Key nothing can race: no savepoint of its own (the batch gives it
      // one should another item throw, group-commit.ts).
      const { input, idem } = item;
      if (!idem) return { run: this.createInTx([input])[0], created: true };
      try {
        return this.createOne({ input, idem });
      } catch (err) {
        if (err !== IDEMPOTENCY_RACE) throw err;
        return this.createOne({ input, idem });
      }
    });
  }

  private now(): string {
    return iso(this.ctx.clock.now());
  }

  /** `attachments`: when the caller knows them (a run it has just created), else read. */
  private toRecord(row: Row, attachments?: RunRecord['attachments']): RunRecord {
    const oz = row.oz === null ? undefined : (JSON.parse(row.oz) as OzFields);
    const skill = oz?.skill ?? (typeof oz?.config?.skill_spec === 'string' ? oz.config.skill_spec : undefined);
    return {
      run_id: row.run_id,
      state: row.state,
      title: row.title,
      prompt: row.prompt,
      config: { environment_id: row.environment_id },
      source: row.schedule === null ? row.source : 'SCHEDULE',
      creator: { type: row.creator_type, name: row.creator_name },
      created_at: row.created_at,
      updated_at: row.updated_at,
      started_at: row.started_at,
      finished_at: row.finished_at,
      status_message: row.status_message,
      error_code: row.error_code,
      retryable: row.retryable === null ? null : row.retryable === 1,
      attachments: attachments ?? (this.stmts.attachmentMeta.all(row.run_id) as RunRecord['attachments']),
      metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
      factory: row.factory,
      automation: row.automation,
      webhook_uid: row.webhook_uid,
      delivery_id: row.delivery_id,
      ...(oz?.config ? { agent_config: { environment_id: row.environment_id, ...oz.config } } : {}),
      ...(skill !== undefined ? { agent_skill: { name: skill } } : {}),
      ...(oz?.conversation_id !== undefined ? { conversation_id: oz.conversation_id } : {}),
      ...(row.schedule !== null ? { schedule: JSON.parse(row.schedule) as RunSchedule } : {}),
      ...(row.retry_of !== null ? { retry_of: row.retry_of } : {}),
      ...(row.replay !== null && row.webhook_uid !== null && row.delivery_id !== null
        ? { replay_of: { webhook_uid: row.webhook_uid, delivery_id: row.delivery_id, ...(JSON.parse(row.replay) as Pick<RunReplay, 'by' | 'at'>) } }
        : {}),
      ...(row.notify !== null ? { webhook: webhookOf(JSON.parse(row.notify) as StoredNotify) } : {}),
    };
  }

  /** The sealing context of a run's notification secret: a sealed value opens for its run only. */
  private static notifyAad(runId: string): Buffer {
    return Buffer.from(`run-notify:${runId}`, 'utf8');
  }

  private sealNotify(runId: string, n: RunNotify): string {
    const stored: StoredNotify = { url: n.url };
    if (n.secret !== undefined) stored.secret_sealed = seal(this.ctx.masterKey, n.secret, RunStore.notifyAad(runId)).toString('base64');
    if (n.secretName !== undefined) stored.secret_name = n.secretName;
    return JSON.stringify(stored);
  }

  private openNotify(runId: string, text: string): RunNotify {
    const stored = JSON.parse(text) as StoredNotify;
    return {
      url: stored.url,
      ...(stored.secret_sealed !== undefined
        ? { secret: openSealed(this.ctx.masterKey, Buffer.from(stored.secret_sealed, 'base64'), RunStore.notifyAad(runId)).toString('utf8') }
        : {}),
      ...(stored.secret_name !== undefined ? { secretName: stored.secret_name } : {}),
    };
  }

  /** The seq of the log entry whose delivery started the run, for a retry to list under it too; null for other runs. */
  entryOf(runId: string): number | null {
    return (this.stmts.entryOf.get(runId) as { delivery_seq: number | null } | undefined)?.delivery_seq ?? null;
  }

  /** The Oz fields a run was created with, as given (a retry keeps them). */
  ozOf(runId: string): OzFields | null {
    const row = this.stmts.get.get(runId) as Row | undefined;
    return row?.oz ? (JSON.parse(row.oz) as OzFields) : null;
  }

  /** Where a run reports (with its secret, for a retry to report to the same place), or undefined. */
  notifyOf(runId: string): RunNotify | undefined {
    const row = this.stmts.notifyOf.get(runId) as { run_id: string; notify: string | null } | undefined;
    return row?.notify ? this.openNotify(row.run_id, row.notify) : undefined;
  }

  /** Queues the notification of a state change, inside the transaction that made it. */
  private enqueueInTx(row: Row, record: RunRecord, now: Date): void {
    if (row.notify === null) return;
    this.stmts.enqueue.run(row.run_id, newSortableId('msg', now.getTime()), row.state, JSON.stringify(record), now.getTime(), iso(now));
    // Inside the transaction: the listener only schedules work for after the commit.
    this.notificationListener?.();
  }

  private notificationListener?: () => void;

  /** `fn` is called when a notification is queued (inside the transaction: it must not touch the store). */
  onNotificationQueued(fn: (() => void) | undefined): void {
    this.notificationListener = fn;
  }

  /**
   * Notifications due by `now`, oldest first, with what sending them needs. On PostgreSQL, where
   * several replicas run a notifier, the ones returned are also held for `holdMs` (their next
   * attempt moved that far ahead), so no other replica sends them meanwhile; the attempt's outcome
   * then sets the real next time (docs/deploy.md#several-replicas). One process on SQLite needs no hold.
   */
  dueNotifications(now: Date, limit: number, holdMs = 0): DueNotification[] {
    type Row = { seq: number; run_id: string; message_id: string; attempts: number; run: string; created_at: string; notify: string | null };
    const rows = this.ctx.db.transaction(() => {
      const due = this.stmts.due.all(now.getTime(), limit) as Row[];
      if (this.ctx.dialect === 'postgres' && holdMs > 0) for (const r of due) this.stmts.hold.run(now.getTime() + holdMs, r.seq);
      return due;
    })();
    return rows.flatMap((r) => {
      if (r.notify === null) return [];
      return [{ seq: r.seq, runId: r.run_id, messageId: r.message_id, attempts: r.attempts, run: JSON.parse(r.run) as RunRecord, notify: this.openNotify(r.run_id, r.notify), createdAt: r.created_at }];
    });
  }

  /**
   * When the next pending notification falls due after `now` (ms since the epoch), or undefined.
   * Those due by now are being sent or wait for a free slot, and the end of an attempt asks again.
   */
  nextNotificationMs(now: Date): number | undefined {
    return (this.stmts.nextDue.get(now.getTime()) as { ms: number | null }).ms ?? undefined;
  }

  /**
   * Records one attempt and its outcome: delivered, failed for good, or pending again at `nextMs`.
   */
  recordNotificationAttempt(seq: number, attempt: number, result: { statusCode: number | null; error: string | null }, outcome: { status: 'delivered' | 'failed' } | { status: 'pending'; nextMs: number }): void {
    this.ctx.db.transaction(() => {
      this.stmts.recordAttempt.run(seq, attempt, this.now(), result.statusCode, result.error);
      this.stmts.settle.run(outcome.status, attempt, outcome.status === 'pending' ? outcome.nextMs : null, seq);
    })();
  }

  /** A run's notifications with every attempt, oldest first (the run view's `notifications`). */
  notifications(runId: string): RunNotification[] {
    const attempts = this.stmts.attemptsOf.all(runId) as { notification_seq: number; attempt: number; at: string; status_code: number | null; error: string | null }[];
    return (this.stmts.notificationsOf.all(runId) as { seq: number; run_id: string; message_id: string; state: RunState; status: RunNotification['status']; next_ms: number | null; created_at: string }[]).map((n) => ({
      seq: n.seq,
      run_id: n.run_id,
      message_id: n.message_id,
      state: n.state,
      status: n.status,
      attempts: attempts.filter((a) => a.notification_seq === n.seq).map(({ notification_seq: _, ...a }) => a),
      next_attempt_at: n.status === 'pending' && n.next_ms !== null ? iso(new Date(n.next_ms)) : null,
      created_at: n.created_at,
    }));
  }

  /**
   * Inserts QUEUED runs with plain INSERTs and no transaction of its own, so the ingress can
   * create a delivery's runs inside the transaction that accepts the delivery
   * (docs/automations.md). Inputs must already be valid.
   */
  createInTx(inputs: NewRun[]): RunRecord[] {
    const records: RunRecord[] = [];
    this.insertRuns(inputs, records);
    return records;
  }

  /** `createInTx` without reading the runs back: their ids (the ingress's hot path needs no more). */
  insertInTx(inputs: NewRun[]): string[] {
    return this.insertRuns(inputs);
  }

  /**
   * The inserts of `insertInTx`. With `records`, pushes each run's record there: its row as the
   * database holds it (its seq, the forms of its fields), and its attachments' list from the
   * inserts themselves, as a read of them would give it.
   */
  private insertRuns(inputs: NewRun[], records?: RunRecord[]): string[] {
    const at = this.ctx.clock.now();
    const now = iso(at);
    const ids: string[] = [];
    // The runs of one delivery share its payload: hashed once, however many automations matched.
    const digests = new Map<Buffer, string>();
    for (const input of inputs) {
      const run_id = newSortableId('run', at.getTime());
      // Positional, in the insert's column order: binding by name looks every name up in an
      // object, a measurable part of a run created per delivery (docs/ingress.md#a-run-per-delivery).
      const values = [
        run_id,
        input.title ?? null,
        input.prompt,
        input.environmentId,
        input.source === 'SCHEDULE' ? 'API' : input.source,
        input.creator.type,
        input.creator.name,
        input.factory ?? null,
        input.automation ?? null,
        input.webhookUid ?? null,
        input.deliveryId ?? null,
        input.deliverySeq ?? null,
        input.metadata == null ? null : JSON.stringify(input.metadata),
        input.oz == null ? null : JSON.stringify(input.oz),
        input.schedule === undefined ? null : JSON.stringify(input.schedule),
        input.retryOf ?? null,
        input.replay ? JSON.stringify({ by: input.replay.by, at: now }) : null,
        input.notify ? this.sealNotify(run_id, input.notify) : null,
        now,
        now,
        input.factory ?? null,
        input.environmentId,
      ];
      const returned = records && this.stmts.insertReturning ? (this.stmts.insertReturning.get(...values) as Row) : undefined;
      if (!returned) this.stmts.insert.run(...values);
      const listed: RunRecord['attachments'] = [];
      for (const a of input.attachments ?? []) {
        const entrySeq = a.inEntry && input.deliverySeq != null ? input.deliverySeq : null;
        let sha256 = digests.get(a.bytes);
        if (sha256 === undefined) digests.set(a.bytes, (sha256 = sha256Hex(a.bytes)));
        this.stmts.insertAttachment.run(run_id, a.name, entrySeq === null ? a.bytes : NO_BYTES, a.bytes.length, sha256, entrySeq);
        if (records) listed.push({ name: a.name, size: a.bytes.length, sha256 });
      }
      if (records) {
        // In the read's order: by name, byte by byte (the C collation of both engines).
        listed.sort((x, y) => Buffer.compare(Buffer.from(x.name), Buffer.from(y.name)));
        records.push(this.toRecord(returned ?? (this.stmts.get.get(run_id) as Row), listed));
      }
      ids.push(run_id);
    }
    return ids;
  }

  /** Creates one run in its own transaction. */
  create(input: NewRun): RunRecord {
    return this.ctx.db.transaction(() => this.createInTx([input])[0])();
  }

  /**
   * Creates runs through the group commit (store/group-commit.ts), in order, in ONE transaction,
   * each in its own savepoint, so an item that fails (a 409 of its Idempotency-Key) fails alone.
   * An item with `idem` (docs/api.md): the same key and request hash within 24 hours return the
   * first run (`created: false`); the same key with another request is a 409. Keys are per API key,
   * so two clients never see each other's runs through a shared key. Throws, with nothing
   * committed, when the transaction itself fails.
   */
  createBatch(items: readonly NewRunItem[]): BatchOutcome<{ run: RunRecord; created: boolean }>[] {
    return this.createAll(items);
  }

  /** Forgets idempotency keys older than 24 hours. */
  pruneIdempotency(): number {
    return this.stmts.idemPrune.run(iso(new Date(this.ctx.clock.now().getTime() - IDEMPOTENCY_TTL_MS))).changes;
  }

  /**
   * The factory the run belongs to (docs/runtime.md#factory-limited-keys): null when none does (an
   * API run on an environment no factory defined when it was made), undefined for an unknown run.
   */
  ownerOf(runId: string): string | null | undefined {
    return this.stmts.owner.get(runId) as string | null | undefined;
  }

  get(runId: string): RunRecord | undefined {
    const row = this.stmts.get.get(runId) as Row | undefined;
    return row ? this.toRecord(row) : undefined;
  }

  /** Attachment bytes, for the executor. */
  attachmentBytes(runId: string): { name: string; bytes: Buffer }[] {
    const rows = this.stmts.attachmentBytes.all(runId) as { name: string; entry_seq: number | null; entry: number | null; bytes: Buffer }[];
    return rows.map((r) => {
      // Never an empty file in place of a payload: retention copies the bytes in before it deletes the entry.
      if (r.entry_seq !== null && r.entry === null) throw new Error(`The attachment ${r.name} of run ${runId} is kept in log entry ${r.entry_seq}, which holds no payload.`);
      return { name: r.name, bytes: r.bytes };
    });
  }

  /**
   * A page of runs, newest first (created_at, then insertion order), after `cursor`. Keyset
   * paging: a page never repeats or skips a run, even while new runs are created.
   */
  list(q: RunListQuery): { runs: RunRecord[]; nextCursor: string | null } {
    if (q.none) return { runs: [], nextCursor: null };
    // A text field of the recorded Oz fields (a JSON object), by its dotted path.
    const ozField = (path: string) =>
      this.ctx.dialect === 'postgres' ? `(oz::jsonb #>> '{${path.split('.').join(',')}}')` : `json_extract(oz, '$.${path}')`;
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.states?.length) {
      where.push(`state IN (${q.states.map(() => '?').join(', ')})`);
      params.push(...q.states);
    }
    const eq: [string, string | undefined][] = [
      ['environment_id', q.environmentId],
      ['source', q.source === 'SCHEDULE' ? undefined : q.source],
      ['factory', q.factory],
      ['automation', q.automation],
      ['creator_name', q.creator],
      [ozField('config.name'), q.configName],
      [ozField('config.model_id'), q.modelId],
      [`COALESCE(${ozField('skill')}, ${ozField('config.skill_spec')})`, q.skill],
    ];
    for (const [col, v] of eq) {
      if (v !== undefined) {
        where.push(`${col} = ?`);
        params.push(v);
      }
    }
    if (q.source !== undefined && q.source !== 'WEBHOOK') where.push(q.source === 'SCHEDULE' ? 'schedule IS NOT NULL' : 'schedule IS NULL');
    if (q.owners !== undefined) {
      // A key limited to some factories (docs/runtime.md#factory-limited-keys): only their runs.
      where.push(q.owners.length ? `owner IN (${q.owners.map(() => '?').join(', ')})` : '1 = 0');
      params.push(...q.owners);
    }
    if (q.scheduleId !== undefined) {
      // The expression and the condition of the runs_by_schedule index (migration 019), so a page reads only its runs.
      where.push(bySchedule(this.ctx.dialect));
      params.push(q.scheduleId);
    }
    if (q.q !== undefined) {
      // instr() on lower-cased text: a plain substring, so % and _ in the query mean themselves.
      const needle = q.q.toLowerCase();
      const instr = this.ctx.dialect === 'postgres' ? 'strpos' : 'instr';
      where.push(`(${instr}(lower(COALESCE(title, '')), ?) > 0 OR ${instr}(lower(prompt), ?) > 0
        OR ${instr}(lower(COALESCE(${ozField('skill')}, ${ozField('config.skill_spec')}, '')), ?) > 0)`);
      params.push(needle, needle, needle);
    }
    if (q.createdAfter) {
      where.push('created_at > ?');
      params.push(q.createdAfter);
    }
    if (q.createdBefore) {
      where.push('created_at < ?');
      params.push(q.createdBefore);
    }
    if (q.updatedAfter) {
      where.push('updated_at > ?');
      params.push(q.updatedAfter);
    }
    const key = q.sortBy ?? 'created_at';
    const order = q.sortOrder ?? 'desc';
    if (q.cursor) {
      const cmp = order === 'desc' ? '<' : '>';
      where.push(`(${key} ${cmp} ? OR (${key} = ? AND seq ${cmp} ?))`);
      params.push(q.cursor.createdAt, q.cursor.createdAt, q.cursor.seq);
    }
    const dir = order === 'desc' ? 'DESC' : 'ASC';
    const sql = `SELECT ${COLUMNS} FROM runs ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
      ORDER BY ${key} ${dir}, seq ${dir} LIMIT ?`;
    // Dynamic filters make the statement vary; better-sqlite3 caches nothing here, which is fine for a list.
    const rows = this.ctx.db.prepare(sql).all(...params, q.limit + 1) as Row[];
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      runs: page.map((r) => this.toRecord(r)),
      nextCursor: rows.length > q.limit && last ? encodeCursor({ createdAt: last[key], seq: last.seq, sortBy: key, sortOrder: order }) : null,
    };
  }

  /**
   * The runs an Accepted log entry started, by the entry's seq, replays and retries of them
   * included (docs/ingress.md#delivery-log: the delivery log shows them), in creation order.
   */
  byEntry(deliverySeq: number): DeliveryRun[] {
    return (this.stmts.byEntry.all(deliverySeq) as { run_id: string; automation: string | null; state: RunState; replay: string | null }[]).map(
      ({ replay, ...r }) => (replay === null ? r : { ...r, replay: JSON.parse(replay) as Pick<RunReplay, 'by' | 'at'> }),
    );
  }

  /** How many runs are in each state (states without runs are absent); read by the metrics at a scrape. */
  countByState(): Record<string, number> {
    const rows = this.stmts.countByState.all() as { state: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  /**
   * `claimNext`'s statements for a claimer limited to `owners` (undefined: any run), prepared once per
   * list. The claim is one statement, so two claimers can never both move the same run
   * (docs/runs.md): the turn-taking choice of `fairNext`, and on PostgreSQL a fallback for when that
   * run was taken meanwhile by another replica. There the row is locked by the first claimer and
   * skipped by the others, which take the oldest run no one holds instead of waiting
   * (docs/runtime.md#postgresql). SQLite has one writer, so a fair claim that finds nothing means
   * nothing is queued.
   */
  private claimStatements(owners: readonly string[] | undefined): ClaimStatements {
    const key = owners?.join('\n') ?? '';
    let stmts = this.claims.get(key);
    if (!stmts) {
      const { db, dialect } = this.ctx;
      const set = `UPDATE runs SET state = 'INPROGRESS', started_at = ?, updated_at = ?`;
      const mine = owners ? ` AND COALESCE(owner, '') IN (${owners.map(() => '?').join(', ')})` : '';
      stmts = {
        fair: db.prepare(`${set} WHERE run_id = (${fairNext(dialect, owners?.length)}) AND state = 'QUEUED' RETURNING ${COLUMNS}`),
        taken:
          dialect === 'postgres'
            ? db.prepare(
                `${set} WHERE run_id = (SELECT run_id FROM runs WHERE state = 'QUEUED'${mine} ORDER BY created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
                   AND state = 'QUEUED' RETURNING ${COLUMNS}`,
              )
            : undefined,
      };
      if (this.claims.size >= 100) this.claims.clear();
      this.claims.set(key, stmts);
    }
    return stmts;
  }

  /**
   * Moves the next QUEUED run to INPROGRESS and returns it (factories take turns, docs/runs.md#the-pool),
   * or undefined when none is queued. `owners`: a claimer limited to these factories (a worker's
   * key, docs/runtime.md#factory-limited-keys) takes only their runs; null or undefined, any run.
   */
  claimNext(owners?: readonly string[] | null): RunRecord | undefined {
    if (owners && owners.length === 0) return undefined;
    return this.ctx.db.transaction(() => {
      const now = this.now();
      const claim = this.claimStatements(owners ?? undefined);
      const params = [now, now, ...(owners ?? [])];
      const row = (claim.fair.get(...params) ?? claim.taken?.get(...params)) as Row | undefined;
      if (!row) return undefined;
      this.appendEventInTx(row.run_id, 'state', { from: 'QUEUED', to: 'INPROGRESS' }, now);
      const record = this.toRecord(row);
      this.enqueueInTx(row, record, new Date(now));
      return record;
    })();
  }

  /**
   * Moves a run to a finished state when core/run-state.ts allows it from the state it is in now;
   * returns the updated run, or undefined when the run is unknown or the move is not allowed
   * (e.g. it already finished). One conditional UPDATE, so concurrent finishers cannot both win.
   */
  finish(runId: string, to: FinalState, input: FinishInput = {}): RunRecord | undefined {
    const from = sourcesOf(to);
    let update = this.finishStmts.get(to);
    if (!update) {
      update = this.ctx.db.prepare(
        `UPDATE runs SET state = ?, finished_at = ?, updated_at = ?, status_message = ?, error_code = ?, retryable = ?
         WHERE run_id = ? AND state IN (${from.map(() => '?').join(', ')})
         RETURNING ${COLUMNS}`,
      );
      this.finishStmts.set(to, update);
    }
    const stmt = update;
    return this.ctx.db.transaction(() => {
      const now = this.now();
      const row = stmt.get(
        to,
        now,
        now,
        // PostgreSQL's text cannot hold U+0000 (SQLite can): a message built from what a command
        // printed shows it as \x00 on both engines, so a run always finishes.
        input.statusMessage === undefined ? null : input.statusMessage.replace(/\0/g, '\\x00'),
        input.errorCode ?? null,
        input.statusMessage === undefined ? null : input.retryable ? 1 : 0,
        runId,
        ...from,
      ) as Row | undefined;
      if (!row) return undefined;
      // A finished run has no process left to stop at a restart.
      this.stmts.groupsClear.run(runId);
      // RETURNING gives the row as it is now; the state it left is the one its start tells: a
      // run is INPROGRESS from its claim (started_at) on, QUEUED before, the only states a finish leaves.
      const left = row.started_at === null ? 'QUEUED' : 'INPROGRESS';
      this.appendEventInTx(runId, 'state', { from: left, to, ...(input.statusMessage ? { status_message: input.statusMessage } : {}) }, now);
      const record = this.toRecord(row);
      this.enqueueInTx(row, record, new Date(now));
      return record;
    })();
  }

  /** Run ids found INPROGRESS (for restart recovery). */
  inProgressIds(): string[] {
    return (this.stmts.inProgress.all() as { run_id: string }[]).map((r) => r.run_id);
  }

  /** Records a process group that a command of the run leads now (restart recovery kills it). */
  addProcessGroup(runId: string, pgid: number): void {
    this.stmts.groupInsert.run(runId, pgid, this.now());
  }

  /** Forgets a process group once it is gone. */
  removeProcessGroup(runId: string, pgid: number): void {
    this.stmts.groupDelete.run(runId, pgid);
  }

  /** The process groups recorded for a run and not yet gone, oldest first. */
  processGroups(runId: string): number[] {
    return (this.stmts.groupsOf.all(runId) as { pgid: number }[]).map((r) => r.pgid);
  }

  private appendEventInTx(runId: string, type: string, data: Record<string, unknown>, time: string): number {
    return this.appendEventJsonInTx(runId, type, JSON.stringify(data), time);
  }

  /**
   * Appends one transcript event whose data is JSON text already, inside the caller's transaction
   * (a worker's batch, store/leases.ts, which measured that text against its cap).
   */
  appendEventJsonInTx(runId: string, type: string, json: string, time: string = this.now()): number {
    const seq = (this.stmts.nextEventSeq.get(runId) as { seq: number }).seq;
    this.stmts.insertEvent.run(runId, seq, time, type, json);
    return seq;
  }

  /** Appends one transcript event; returns its seq. */
  appendEvent(runId: string, type: string, data: Record<string, unknown>): number {
    return this.ctx.db.transaction(() => this.appendEventInTx(runId, type, data, this.now()))();
  }

  /** Transcript events after `after`, oldest first, at most `limit`. */
  events(runId: string, after: number, limit: number): TranscriptEvent[] {
    return (this.stmts.events.all(runId, after, limit) as { seq: number; time: string; type: string; data: string }[]).map((e) => ({
      seq: e.seq,
      time: e.time,
      type: e.type,
      data: JSON.parse(e.data) as Record<string, unknown>,
    }));
  }

  /** Runs whose workspace is due for removal: finished before `before` and not yet cleaned. */
  workspacesDue(before: Date, limit = 100): string[] {
    return (this.stmts.workspacesDue.all(iso(before), limit) as { run_id: string }[]).map((r) => r.run_id);
  }

  markWorkspaceRemoved(runId: string): void {
    this.stmts.workspaceRemoved.run(this.now(), runId);
  }
}
