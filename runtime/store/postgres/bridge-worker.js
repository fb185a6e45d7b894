// The PostgreSQL side of the store's blocking bridge (docs/runtime.md#postgresql): a worker thread
// holding one `pg` connection for queries and one for LISTEN. The main thread (postgres/db.ts)
// posts a request on `port`, then blocks on `flag` with Atomics.wait; this worker runs the query,
// posts the answer, sets the flag and wakes it. Plain JavaScript so that it loads both under tsx
// and next to the esbuild bundle in dist/.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

/** @typedef {{ id: number, mode: 'connect' | 'query' | 'exec' | 'listen' | 'unlisten' | 'close', sql?: string, params?: unknown[], channel?: string, inTx?: boolean }} Request */

// The store's SQL expects numbers where SQLite gives numbers: BIGINT (20) and NUMERIC (1700)
// come back as JS numbers (ids and counts stay far below 2^53). BYTEA is a Buffer already.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

const { connectionString, flag: flagBuffer, port, notifyPort } = /** @type {{ connectionString: string, flag: SharedArrayBuffer, port: import('node:worker_threads').MessagePort, notifyPort: import('node:worker_threads').MessagePort }} */ (workerData);
const flag = new Int32Array(flagBuffer);

const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A connection opened on first use and again after it was lost: `get()` gives the open client,
 * connecting at most once at a time. `wire` adds the client's handlers before it connects; `ready`
 * runs on it once connected, before anyone gets it. A failed connect (or `ready`) ends the client
 * and lets the next `get()` try again.
 * @param {(c: pg.Client) => void} wire
 * @param {(c: pg.Client) => Promise<void>} [ready]
 */
function connection(wire, ready) {
  const conn = {
    /** @type {pg.Client | null} */
    client: null,
    /** @type {Promise<pg.Client> | null} */
    connecting: null,
    /** @returns {Promise<pg.Client>} */
    get() {
      if (conn.client) return Promise.resolve(conn.client);
      if (!conn.connecting) {
        // TCP keepalive: a flow that a NAT or firewall dropped without a word is found by the kernel too.
        const c = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
        wire(c);
        conn.connecting = c
          .connect()
          .then(() => ready?.(c))
          .then(
            () => {
              conn.client = c;
              conn.connecting = null;
              return c;
            },
            (err) => {
              conn.connecting = null;
              c.end().catch(() => {});
              throw err;
            },
          );
      }
      return conn.connecting;
    },
  };
  return conn;
}

/** The query connection. */
const query = connection((c) => {
  // ReadyForQuery carries the transaction status; it arrives before the query's promise settles.
  /** @type {any} */ (c).connection.on('readyForQuery', (/** @type {{ status: string }} */ msg) => {
    txStatus = msg.status;
  });
  // The connection is gone (server restart, network): the next request opens a new one.
  const gone = () => {
    if (query.client !== c) return;
    query.client = null;
    txStatus = 'I';
  };
  c.on('error', gone);
  c.on('end', gone);
});

/** Structured clone turns Buffers into Uint8Arrays: turn them back (in arrays too), so pg sends them as bytea. */
function toPg(value) {
  if (Array.isArray(value)) return value.map(toPg);
  return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
}

/** What the main thread gets of an error: enough to map it (SQLSTATE) and say it in one sentence. */
function errorOf(err) {
  const e = /** @type {any} */ (err);
  return { message: String(e?.message ?? e), code: typeof e?.code === 'string' ? e.code : undefined, detail: e?.detail, constraint: e?.constraint };
}

/** The query connection's transaction status after its last request (I idle, T in one, E failed). */
let txStatus = 'I';

/** Posts the answer, then bumps the flag and wakes the main thread (which re-reads the port). */
function reply(message) {
  port.postMessage({ ...message, tx: txStatus });
  Atomics.add(flag, 0, 1);
  Atomics.notify(flag, 0);
}

// ---- LISTEN connection ---------------------------------------------------------------------

/** Channels listened to now (the main thread asks for each once). */
const channels = new Set();
let closing = false;
let retryMs = 100;

const quoteIdent = (name) => `"${String(name).replace(/"/g, '""')}"`;

/** The LISTEN connection: a new one listens on every channel before it is used. */
const listening = connection(
  (c) => {
    c.on('notification', (n) => notifyPort.postMessage({ channel: n.channel, payload: n.payload ?? '' }));
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
  },
  async (c) => {
    for (const ch of channels) await c.query(`LISTEN ${quoteIdent(ch)}`);
  },
);

/**
 * The LISTEN connection dropped: reconnect (backing off up to 5 s), LISTEN again on every channel,
 * then tell every channel something may have changed, since notifications sent while it was down
 * are lost (docs/runtime.md#postgresql).
 */
function lost(c) {
  if (listening.client !== c || closing) return;
  listening.client = null;
  const retry = () => {
    if (closing) return;
    listening.get().then(
      () => {
        retryMs = 100;
        announceAll();
      },
      () => {
        retryMs = Math.min(retryMs * 2, 5000);
        setTimeout(retry, retryMs).unref?.();
      },
    );
  };
  setTimeout(retry, retryMs).unref?.();
}

/** Tells every channel something may have changed (its caches are dropped). */
function announceAll() {
  for (const ch of channels) notifyPort.postMessage({ channel: ch, payload: '', synthetic: true });
}

/**
 * The LISTEN connection's heartbeat (docs/runtime.md#postgresql). A LISTEN connection only
 * receives, so one whose flow died silently (a NAT or firewall that dropped it without a reset)
 * would never fail, and the caches it keeps fresh would be stale for good: every HEARTBEAT_MS it
 * runs `SELECT 1`, and one that has not answered within HEARTBEAT_TIMEOUT_MS is given up and
 * replaced, as a dropped one is. While there is no LISTEN connection, notifications cannot arrive,
 * so every channel is told at each beat that something may have changed: the caches then follow
 * the database by reading it again, at most a beat late.
 */
const HEARTBEAT_MS = 1000;
const HEARTBEAT_TIMEOUT_MS = 2 * HEARTBEAT_MS;
let beating = false;
setInterval(() => {
  if (closing || channels.size === 0) return;
  const c = listening.client;
  if (!c) {
    announceAll();
    return;
  }
  if (beating) return;
  beating = true;
  // pg's own query_timeout gives up on the answer (the connection is then ours to replace).
  c.query({ text: 'SELECT 1', query_timeout: HEARTBEAT_TIMEOUT_MS })
    .then(
      () => {},
      () => {
        // Given up: replaced as a dropped connection is, and the socket closed without waiting for the server.
        lost(c);
        announceAll();
        /** @type {any} */ (c).connection?.stream?.destroy();
      },
    )
    .finally(() => {
      beating = false;
    });
}, HEARTBEAT_MS).unref?.();

// ---- requests ------------------------------------------------------------------------------

/**
 * A statement of a transaction whose connection is no longer in it (the connection was lost and a
 * new one opened, or the transaction was rolled back under the caller): running it would run it
 * outside the transaction, and a COMMIT would "succeed" with nothing. Only a ROLLBACK may go on.
 * @param {Request} req
 */
function transactionGone(req) {
  return req.inTx === true && txStatus === 'I' && !/^\s*ROLLBACK\s*$/i.test(req.sql ?? '');
}

/**
 * Named statements (docs/runtime.md#postgresql): the first time the query connection runs a SQL
 * text, it is parsed and planned under a name of its own, and later runs only bind its values, so
 * PostgreSQL no longer parses and plans every statement it executes. At most NAMED_MAX texts are
 * named (the store prepares a few hundred; texts built per request, such as an IN list per key,
 * could be any number): the rest run unnamed, as every statement did before. A connection opened
 * again after one was lost starts without them, and `pg` parses each name again on its first run.
 */
const NAMED_MAX = 2000;
/** @type {Map<string, string>} */
let names = new Map();
/** Bumped when the names are forgotten: the server may still hold the old ones, so new names never reuse theirs. */
let generation = 0;

/** @param {string} sql */
function nameOf(sql) {
  let name = names.get(sql);
  if (name === undefined && names.size < NAMED_MAX) {
    name = `factory_${generation}_${names.size}`;
    names.set(sql, name);
  }
  return name;
}

/**
 * A named statement that cannot run as it was planned: a migration by another replica changed the
 * columns a `SELECT *` returns (PostgreSQL then refuses the old plan rather than re-plan it with
 * another result type), or the server no longer has the name. Both fail before the statement does
 * anything.
 * @param {unknown} err
 */
function stalePlan(err) {
  const e = /** @type {any} */ (err);
  return (e?.code === '0A000' && /cached plan must not change result type/.test(String(e.message))) || e?.code === '26000';
}

/**
 * Runs one statement of the store. On a stale plan every name is forgotten (the next run of each
 * text parses it again under a new name), and a statement that ran outside a transaction is run
 * again at once; in a transaction, PostgreSQL has ended the transaction, so the error goes back
 * to the caller, as any failed statement's does.
 * @param {pg.Client} c
 * @param {Request} req
 */
async function run(c, req) {
  const values = (req.params ?? []).map(toPg);
  try {
    return await c.query({ name: nameOf(req.sql), text: req.sql, values });
  } catch (err) {
    if (!stalePlan(err)) throw err;
    names = new Map();
    generation += 1;
    if (req.inTx) throw err;
    return await c.query({ name: nameOf(req.sql), text: req.sql, values });
  }
}

/** @param {Request} req */
async function handle(req) {
  if ((req.mode === 'query' || req.mode === 'exec') && transactionGone(req)) {
    throw Object.assign(new Error('the transaction ended before its work was done (the connection to PostgreSQL was lost, or it was rolled back); nothing of it was committed'), { code: '08006' });
  }
  switch (req.mode) {
    case 'connect': {
      await query.get();
      return {};
    }
    case 'query': {
      const c = await query.get();
      const r = await run(c, /** @type {Request & { sql: string }} */ (req));
      return { rows: r.rows, rowCount: r.rowCount ?? 0, fields: (r.fields ?? []).map((f) => f.name) };
    }
    case 'exec': {
      const c = await query.get();
      await c.query(req.sql);
      return {};
    }
    case 'listen': {
      if (!channels.has(req.channel)) {
        channels.add(req.channel);
        const c = await listening.get();
        // A connection that came up after the add already listens on it.
        await c.query(`LISTEN ${quoteIdent(req.channel)}`);
      }
      return {};
    }
    case 'unlisten': {
      if (channels.delete(req.channel) && listening.client) await listening.client.query(`UNLISTEN ${quoteIdent(req.channel)}`);
      return {};
    }
    case 'close': {
      closing = true;
      await Promise.allSettled([query.client?.end(), listening.client?.end()]);
      query.client = listening.client = null;
      return {};
    }
    default:
      throw new Error(`unknown bridge request ${String(req.mode)}`);
  }
}

// One request at a time: the main thread blocks until each is answered.
port.on('message', (/** @type {Request} */ req) => {
  handle(req).then(
    (result) => reply({ id: req.id, ok: true, ...result }),
    (err) => reply({ id: req.id, ok: false, error: errorOf(err) }),
  );
});
