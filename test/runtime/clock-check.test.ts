import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../core/errors.ts';
import { FakeClock } from '../../runtime/clock.ts';
import { ClockCheck } from '../../runtime/clock-check.ts';
import { parseConfig } from '../../runtime/config.ts';
import { LeaseSweeper } from '../../runtime/executor/lease-sweeper.ts';
import { createLogger } from '../../runtime/log.ts';
import { postgresUrl, testDatabase } from '../helpers/postgres.ts';
import { LogCapture, startTestRuntime } from './helpers.ts';

/** The clock check of replicas on PostgreSQL (runtime/clock-check.ts, docs/deploy.md#clocks), against a real server. */

function setup(t: Parameters<typeof testDatabase>[0], store: ReturnType<NonNullable<Awaited<ReturnType<typeof testDatabase>>>['open']>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-clock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug', destination: logs });
  const config = parseConfig({ port: 0, dataDir }, {});
  // The machine's clock, moved by `offset` (what a machine whose clock is wrong would read).
  const offset = { ms: 0 };
  const check = new ClockCheck({ store, log, config }, () => Date.now() + offset.ms);
  t.after(() => check.stop());
  return { check, logs, config, log, offset };
}

test('a machine whose clock agrees with the database starts; one a minute off either way does not, in one sentence', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const store = db.open({ clock: new FakeClock() });
  const { check, logs, offset } = setup(t, store);
  check.verify();
  // The same machine: well within a second (the reading's uncertainty is half a round trip).
  assert.ok(Math.abs(check.last!.skewMs) < 1000, `skew ${check.last!.skewMs} ms`);
  assert.equal(check.skewed, false);
  assert.match(logs.text, /clock agrees with the database/);

  offset.ms = 60_000;
  assert.throws(
    () => check.verify(),
    (err: Error) =>
      err instanceof CliError &&
      /^this machine's clock is 60\.0 s ahead of the clock of PostgreSQL at postgres:\/\/.*, more than the 5 s replicas may differ by .*; set the clock right \(NTP\) and start again\.$/.test(err.message),
  );
  offset.ms = -60_000;
  assert.throws(() => check.verify(), /60\.0 s behind the clock of PostgreSQL/);
});

test('a running replica whose clock drifts away logs it, holds off its lease sweep, and goes on when the clocks agree again', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const clock = new FakeClock();
  const store = db.open({ clock });
  const { check, logs, config, log, offset } = setup(t, store);
  check.verify();
  check.start();
  const sweeper = new LeaseSweeper({ store, log, config, services: { clock: check } });

  // A run whose executor stopped renewing its lease: a sweep would end it.
  const run = store.runs.create({ prompt: 'p', environmentId: 'default', source: 'API', creator: { type: 'user', name: 'ada' } });
  assert.equal(store.leases.claim({ id: 'gone', name: 'gone/1' }, 30_000)?.run_id, run.run_id);
  clock.advance(60_000);

  offset.ms = 30_000;
  check.check();
  assert.equal(check.skewed, true);
  const error = logs.records().find((r) => r.level === 50);
  assert.match(String(error?.msg), /clock is 30\.0 s ahead of the database's: this replica's lease sweep holds off/);
  // The record's fields, for whoever alerts on the log: the skew measured (about 30 s) and the limit.
  assert.equal(error?.limitMs, 5000);
  assert.ok(Math.abs(Number(error?.skewMs) - 30_000) < 1000, `skewMs ${String(error?.skewMs)}`);
  assert.deepEqual(sweeper.sweep(), []);
  assert.equal(store.runs.get(run.run_id)?.state, 'INPROGRESS');

  offset.ms = 0;
  check.check();
  assert.equal(check.skewed, false);
  assert.match(logs.text, /agrees with the database's again/);
  assert.deepEqual(sweeper.sweep(), [run.run_id]);
  assert.equal(store.runs.get(run.run_id)?.state, 'ERROR');
});

test('on SQLite there is no other clock: nothing is checked', async (t) => {
  const db = await testDatabase(t, 'sqlite');
  if (!db) return;
  const store = db.open({ clock: new FakeClock() });
  const { check, offset } = setup(t, store);
  offset.ms = 3_600_000;
  check.verify();
  assert.equal(check.last, undefined);
  assert.equal(check.skewed, false);
});

test("a replica's metrics say how far its clock is from the database's; a SQLite runtime's have no such series", async (t) => {
  const url = await postgresUrl(t);
  if (url === undefined) return;
  for (const options of [{ postgres: url }, { sqlite: true }]) {
    const rt = await startTestRuntime({ ...options, flags: { metricsPort: 0 } });
    t.after(() => rt.stop());
    const text = await (await fetch(`http://127.0.0.1:${rt.services.metrics!.port}/metrics`)).text();
    const line = /^factory_clock_skew_seconds (\S+)$/m.exec(text);
    if (options.sqlite) {
      assert.equal(line, null);
      continue;
    }
    assert.ok(line, 'the gauge is there');
    assert.ok(Math.abs(Number(line[1])) < 1, `the same machine: ${line[1]} s`);
    assert.match(text, /^# HELP factory_clock_skew_seconds This machine's clock minus the database server's/m);
  }
});
