import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { FakeClock } from '../../../runtime/clock.ts';
import { FactoryError } from '../../../core/errors.ts';
import { forEachEngine, type TestDatabase } from '../../helpers/postgres.ts';
import { decodeCursor, type NewRun } from '../../../runtime/store/runs.ts';

const input = (over: Partial<NewRun> = {}): NewRun => ({
  prompt: 'Do it',
  environmentId: 'default',
  source: 'API',
  creator: { type: 'user', name: 'ada' },
  ...over,
});

function setup(_t: unknown, db: TestDatabase) {
  const clock = new FakeClock();
  const store = db.open({ clock });
  return { clock, store };
}

/** Creates QUEUED runs a millisecond apart, each of `factory` (none when left out); answers their ids. */
const madeBy = (store: ReturnType<typeof setup>['store'], clock: FakeClock) => (factory?: string) => {
  clock.advance(1);
  return store.runs.create(input(factory ? { factory } : {})).run_id;
};

// A few side by side, each on a database of its own: a PostgreSQL test spends much of its time
// waiting on the server (its schema's creation and drop).
describe('the runs store', { concurrency: 4 }, () => {
  forEachEngine('a created run is QUEUED with its fields and attachment metadata', (t, db) => {
    const { store } = setup(t, db);
    const run = store.runs.create(
      input({ title: 'T', metadata: { a: 1 }, source: 'WEBHOOK', creator: { type: 'automation', name: 'triage' }, factory: 'f', automation: 'triage', webhookUid: 'wh_x', deliveryId: 'd1', attachments: [{ name: 'event-payload.json', bytes: Buffer.from('{}') }] }),
    );
    assert.match(run.run_id, /^run_[a-z2-7]{26}$/);
    assert.equal(run.state, 'QUEUED');
    assert.deepEqual(run.config, { environment_id: 'default' });
    assert.deepEqual(run.metadata, { a: 1 });
    assert.deepEqual(run.attachments, [{ name: 'event-payload.json', size: 2, sha256: '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a' }]);
    assert.deepEqual(store.runs.attachmentBytes(run.run_id), [{ name: 'event-payload.json', bytes: Buffer.from('{}') }]);
    assert.equal(run.started_at, null);
    // What the create answered is what a read gives, attachments in the read's order (by name,
    // byte by byte: 'B' < 'a' < 'é', and one payload shared by two names hashed once each).
    const bytes = Buffer.from('[1]');
    const several = store.runs.create(
      input({ attachments: [{ name: 'é.txt', bytes }, { name: 'a.json', bytes: Buffer.from('{}') }, { name: 'B.md', bytes }] }),
    );
    assert.deepEqual(several.attachments.map((a) => a.name), ['B.md', 'a.json', 'é.txt']);
    assert.deepEqual(several, store.runs.get(several.run_id));
    assert.deepEqual(run, store.runs.get(run.run_id));
  });

  forEachEngine('claims take the oldest QUEUED run, each run exactly once, with a state event', (t, db) => {
    const { store, clock } = setup(t, db);
    const a = store.runs.create(input());
    clock.advance(1);
    const b = store.runs.create(input());
    assert.equal(store.runs.claimNext()?.run_id, a.run_id);
    const claimedB = store.runs.claimNext()!;
    assert.equal(claimedB.run_id, b.run_id);
    assert.equal(claimedB.state, 'INPROGRESS');
    assert.equal(store.runs.claimNext(), undefined);
    assert.deepEqual(store.runs.events(a.run_id, 0, 10).map((e) => [e.seq, e.type, e.data]), [[1, 'state', { from: 'QUEUED', to: 'INPROGRESS' }]]);
  });

  forEachEngine('factories take turns: a claim takes the oldest run of the factory with the fewest runs in progress', (t, db) => {
    const { store, clock } = setup(t, db);
    const made = madeBy(store, clock);
    // Factory a floods the queue first; b and an API run that belongs to no factory come after.
    const a = [made('a'), made('a'), made('a'), made('a')];
    const b = [made('b'), made('b')];
    const none = made();
    const order: string[] = [];
    for (let next = store.runs.claimNext(); next; next = store.runs.claimNext()) order.push(next.run_id);
    // All idle: a's oldest. Then b and the run of no factory, idle both, oldest first; then one
    // each in turn while both have runs queued; then what is left of a, oldest first.
    assert.deepEqual(order, [a[0], b[0], none, a[1], b[1], a[2], a[3]]);
    // Finished runs no longer count: with three of a's four done, a has 1 in progress against b's 2,
    // so a's new run goes before b's older one.
    for (const id of a.slice(0, 3)) store.runs.finish(id, 'SUCCEEDED');
    const later = [made('b'), made('a')];
    assert.equal(store.runs.claimNext()?.run_id, later[1], 'a now has 1 in progress against b\'s 2');
    assert.equal(store.runs.claimNext()?.run_id, later[0]);
  });

  forEachEngine('a claimer limited to some factories takes only their runs, the listed factories taking turns', (t, db) => {
    const { store, clock } = setup(t, db);
    const made = madeBy(store, clock);
    const [a1, b1, c1, a2, none, b2] = [made('a'), made('b'), made('c'), made('a'), made(), made('b')];
    assert.equal(store.runs.claimNext([]), undefined);
    assert.equal(store.runs.claimNext(['x']), undefined, 'a factory with nothing queued');
    const order: string[] = [];
    for (let next = store.runs.claimNext(['a', 'b']); next; next = store.runs.claimNext(['a', 'b'])) order.push(next.run_id);
    assert.deepEqual(order, [a1, b1, a2, b2]);
    // The rest stays for a claimer that may take it.
    assert.deepEqual([store.runs.claimNext()?.run_id, store.runs.claimNext()?.run_id, store.runs.claimNext()], [c1, none, undefined]);
  });

  forEachEngine('finish follows the state machine; a finished run never changes again', (t, db) => {
    const { store } = setup(t, db);
    const run = store.runs.create(input());
    assert.equal(store.runs.finish(run.run_id, 'SUCCEEDED'), undefined, 'QUEUED cannot succeed');
    store.runs.claimNext();
    const failed = store.runs.finish(run.run_id, 'FAILED', { statusMessage: 'agent exited with exit code 3', errorCode: 'agent_failed' })!;
    assert.equal(failed.state, 'FAILED');
    assert.equal(failed.retryable, false);
    assert.ok(failed.finished_at);
    assert.equal(store.runs.finish(run.run_id, 'CANCELLED'), undefined);
    assert.equal(store.runs.get(run.run_id)!.state, 'FAILED');
    const queued = store.runs.create(input());
    assert.equal(store.runs.finish(queued.run_id, 'CANCELLED', { statusMessage: 'cancelled' })!.state, 'CANCELLED');
    // The final state event names the state the run left, as every state event does.
    assert.deepEqual(store.runs.events(run.run_id, 0, 10).at(-1)!.data, { from: 'INPROGRESS', to: 'FAILED', status_message: 'agent exited with exit code 3' });
    assert.deepEqual(store.runs.events(queued.run_id, 0, 10).at(-1)!.data, { from: 'QUEUED', to: 'CANCELLED', status_message: 'cancelled' });
  });

  forEachEngine('transcript events are numbered per run and read after a seq', (t, db) => {
    const { store } = setup(t, db);
    const run = store.runs.create(input());
    for (let i = 0; i < 5; i++) store.runs.appendEvent(run.run_id, 'output', { text: `line ${i}` });
    assert.deepEqual(store.runs.events(run.run_id, 2, 2).map((e) => e.seq), [3, 4]);
    assert.equal(store.runs.events(run.run_id, 5, 10).length, 0);
  });

  forEachEngine('paging is newest first without gaps or duplicates while runs are created', (t, db) => {
    const { store, clock } = setup(t, db);
    const ids: string[] = [];
    for (let i = 0; i < 45; i++) {
      if (i % 3 === 0) clock.advance(1); // some runs share a created_at
      ids.push(store.runs.create(input()).run_id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = store.runs.list({ limit: 20, cursor: cursor ? decodeCursor(cursor) : undefined });
      seen.push(...page.runs.map((r) => r.run_id));
      cursor = page.nextCursor;
      pages++;
      store.runs.create(input()); // a newer run never shows up on later pages
      clock.advance(1);
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...ids].reverse());
  });

  forEachEngine('list filters', (t, db) => {
    const { store, clock } = setup(t, db);
    const a = store.runs.create(input({ environmentId: 'e1' }));
    clock.advance(1000);
    const b = store.runs.create(input({ source: 'WEBHOOK', factory: 'f', automation: 'x', creator: { type: 'automation', name: 'x' } }));
    store.runs.finish(b.run_id, 'CANCELLED');
    const ids = (q: object) => store.runs.list({ limit: 10, ...q }).runs.map((r) => r.run_id);
    assert.deepEqual(ids({ states: ['CANCELLED'] }), [b.run_id]);
    assert.deepEqual(ids({ states: ['CANCELLED', 'QUEUED'] }), [b.run_id, a.run_id]);
    assert.deepEqual(ids({ environmentId: 'e1' }), [a.run_id]);
    assert.deepEqual(ids({ source: 'WEBHOOK', factory: 'f', automation: 'x' }), [b.run_id]);
    assert.deepEqual(ids({ createdAfter: a.created_at }), [b.run_id]);
    assert.deepEqual(ids({ createdBefore: b.created_at }), [a.run_id]);
  });

  forEachEngine('idempotent creates: same key and body → same run; other body → 409; expired → new run', (t, db) => {
    const { store, clock } = setup(t, db);
    const idem = { keyId: 'key_1', key: 'abc', requestHash: 'h1' };
    // One create under an Idempotency-Key, as the run API makes it: a batch of one.
    const createIdempotent = (run: NewRun, key: typeof idem) => {
      const [outcome] = store.runs.createBatch([{ input: run, idem: key }]);
      if (!outcome.ok) throw outcome.error;
      return outcome.result;
    };
    const first = createIdempotent(input(), idem);
    assert.equal(first.created, true);
    const again = createIdempotent(input(), idem);
    assert.deepEqual([again.created, again.run.run_id], [false, first.run.run_id]);
    assert.throws(() => createIdempotent(input(), { ...idem, requestHash: 'h2' }), (e: unknown) => e instanceof FactoryError && e.code === 'conflict');
    assert.equal(createIdempotent(input(), { ...idem, keyId: 'key_2' }).created, true, 'keys are per API key');
    clock.advance(24 * 3600 * 1000 + 1);
    const later = createIdempotent(input(), { ...idem, requestHash: 'h2' });
    assert.equal(later.created, true);
    assert.notEqual(later.run.run_id, first.run.run_id);
  });

  forEachEngine('createInTx joins the caller transaction: a rollback leaves no run', (t, db) => {
    const { store } = setup(t, db);
    assert.throws(() =>
      store.transaction(() => {
        store.runs.createInTx([input(), input()]);
        throw new Error('ingress failed later in the same transaction');
      }),
    );
    assert.equal(store.runs.list({ limit: 10 }).runs.length, 0);
    const runs = store.transaction(() => store.runs.createInTx([input(), input()]));
    assert.equal(runs.length, 2);
  });

  forEachEngine('in-progress runs are found for recovery; workspaces are due after retention', (t, db) => {
    const { store, clock } = setup(t, db);
    const run = store.runs.create(input());
    store.runs.claimNext();
    assert.deepEqual(store.runs.inProgressIds(), [run.run_id]);
    store.runs.finish(run.run_id, 'ERROR', { statusMessage: 'the runtime stopped while the run was in progress', errorCode: 'runtime_stopped', retryable: true });
    assert.equal(store.runs.get(run.run_id)!.retryable, true);
    assert.deepEqual(store.runs.workspacesDue(clock.now()), []);
    clock.advance(1);
    assert.deepEqual(store.runs.workspacesDue(clock.now()), [run.run_id]);
    store.runs.markWorkspaceRemoved(run.run_id);
    assert.deepEqual(store.runs.workspacesDue(clock.now()), []);
  });
});
