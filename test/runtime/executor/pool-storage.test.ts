import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../../helpers/eventually.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, createRun, envYaml, waitForRun } from '../routes/runs-helpers.ts';

/**
 * A run that ends while the runtime cannot write (a full disk): its outcome is written once writes
 * work again, not lost to a later "worker_lost", and the transcript events that could not be
 * stored are named in a line at its end (docs/runs.md#workers). The failing writes are SQLite's
 * own: temporary triggers that refuse them until they are dropped.
 */

let rt: TestRuntime;
before(async () => {
  // SQLite: the triggers below are its syntax.
  rt = await startTestRuntime({ sqlite: true });
  await applyEnvironments(rt, { brief: envYaml({ command: ['/bin/sh', '-c', 'sleep 1; echo done'] }) });
});
after(() => rt.stop());

test('an outcome that cannot be written is tried again until it can; events that could not be stored are named', { timeout: 60_000 }, async () => {
  const { res, body } = await createRun(rt, { prompt: 'go', config: { environment_id: 'brief' } });
  assert.equal(res.status, 201);
  const id = body.run_id as string;
  await waitForRun(rt, id, (r) => r.state === 'INPROGRESS');
  rt.store.db.exec(`
    CREATE TEMP TRIGGER refuse_outcome BEFORE UPDATE OF state ON main.runs WHEN NEW.state <> 'INPROGRESS'
    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
    CREATE TEMP TRIGGER refuse_events BEFORE INSERT ON main.run_events
    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;`);
  await eventually(() => rt.logs.text.includes('could not record the outcome of a run; trying again every second'), 'the first failed attempt');
  assert.equal(rt.store.runs.get(id)?.state, 'INPROGRESS');
  rt.store.db.exec('DROP TRIGGER refuse_outcome; DROP TRIGGER refuse_events;');
  const done = await waitForRun(rt, id);
  assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
  const texts = rt.store.runs.events(id, 0, 1000).map((e) => String((e.data as { text?: string }).text ?? ''));
  assert.ok(
    texts.some((t) => /^\[\d+ transcript event\(s\) of this run could not be stored: the runtime's storage failed\]\n$/.test(t)),
    JSON.stringify(texts),
  );
});
