import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { FakeClock } from '../../../../runtime/clock.ts';
import type { NewRun } from '../../../../runtime/store/runs.ts';
import { testDatabase } from '../../../helpers/postgres.ts';

/** Two replicas on one PostgreSQL database (docs/runtime.md#postgresql). */

const input = (prompt: string): NewRun => ({ prompt, environmentId: 'default', source: 'API', creator: { type: 'user', name: 'ada' } });

test('claims of two replicas never take the same run', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const clock = new FakeClock();
  const a = db.open({ clock });
  const b = db.open({ clock });
  for (let i = 0; i < 6; i++) a.runs.create(input(`p${i}`));
  // B holds its claim's row lock (transaction open) while A claims: A skips the locked run.
  b.db.exec('BEGIN');
  const heldByB = b.runs.claimNext()!;
  const byA = a.runs.claimNext()!;
  assert.notEqual(byA.run_id, heldByB.run_id);
  b.db.exec('COMMIT');
  const claimed = [heldByB.run_id, byA.run_id];
  for (;;) {
    const next = (claimed.length % 2 ? a : b).runs.claimNext();
    if (!next) break;
    claimed.push(next.run_id);
  }
  assert.equal(new Set(claimed).size, 6, 'each run claimed once');
  assert.equal(claimed.length, 6);
});

test('an Idempotency-Key taken by another replica meanwhile answers with that replica\'s run', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const store = db.open({ clock: new FakeClock() });
  const hash = 'h1';
  // The other replica: inserts its run and takes the key in a transaction it commits a moment later,
  // after this store has looked the key up (not there yet) and is about to take it too.
  const other = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import pg from 'pg';
       const c = new pg.Client({ connectionString: ${JSON.stringify(db.where)} });
       await c.connect();
       await c.query('BEGIN');
       await c.query("INSERT INTO runs (run_id, state, prompt, environment_id, source, creator_type, creator_name, created_at, updated_at) VALUES ('run_other', 'QUEUED', 'theirs', 'default', 'API', 'user', 'ada', $1, $1)", [new Date().toISOString()]);
       await c.query("INSERT INTO run_idempotency (key_id, idempotency_key, request_hash, run_id, created_at) VALUES ('key_a', 'k', '${hash}', 'run_other', $1)", [new Date().toISOString()]);
       process.stdout.write('taken\\n');
       await new Promise((r) => setTimeout(r, 1000));
       await c.query('COMMIT');
       await c.end();`,
    ],
    { cwd: new URL('../../../../', import.meta.url), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.after(() => other.kill());
  const [chunk] = (await once(other.stdout!, 'data')) as [Buffer];
  assert.equal(chunk.toString().trim(), 'taken');
  // Blocks on the other replica's uncommitted key until it commits, then answers with its run.
  const [result] = store.runs.createBatch([{ input: input('mine'), idem: { keyId: 'key_a', key: 'k', requestHash: hash } }]);
  assert.ok(result.ok, String(!result.ok && result.error));
  assert.deepEqual([result.result.created, result.result.run.run_id, result.result.run.prompt], [false, 'run_other', 'theirs']);
  assert.deepEqual(store.runs.list({ limit: 10 }).runs.map((r) => r.prompt), ['theirs'], 'the run this store started was undone');
});
