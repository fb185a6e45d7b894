import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { compile } from '../../../cli/compiler/compile.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { nextFire, parseSchedule } from '../../../core/schedule.ts';
import { SCHEDULE_HEADING } from '../../../runtime/automations/scheduler.ts';
import { snapshotDigest } from '../../../runtime/definitions/checks.ts';
import { anotherReplicaHolding, postgresUrl } from '../../helpers/postgres.ts';
import { SCHEDULES_LOCK } from '../../../runtime/store/schedules.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';

const ENV = { path: 'environments/e.yaml', text: 'agent:\n  command: ["true"]\n' };
const sched = (cron: string, name?: string) =>
  `  - provider: schedule\n    event: cron_fired\n    schedule:\n${name ? `      name: ${name}\n` : ''}      cron: "${cron}"\n`;

async function apply(rt: TestRuntime, automations: Record<string, string>): Promise<void> {
  const files = [{ path: 'factory.yaml', text: 'name: tests\n' }, ENV, ...Object.entries(automations).map(([name, text]) => ({ path: `automations/${name}.md`, text }))];
  const { snapshot, diagnostics } = compile(files);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  const res = await rt.fetch('/api/v1/factories/tests/apply', { method: 'POST', json: { snapshot } });
  assert.equal(res.status, 200, await res.text());
}

/** The scheduled runs, oldest first (whichever tick started them: the test's or the service's own). */
const scheduled = (rt: TestRuntime) => rt.store.runs.list({ limit: 100, source: 'SCHEDULE' }).runs.reverse();

/** A runtime on a fake clock whose pool is paused, so the scheduled runs stay QUEUED where the test reads them. */
async function startPaused(t: TestContext, at: string) {
  const clock = new FakeClock(at);
  const rt = await startTestRuntime({ clock });
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  return { clock, rt, scheduler: rt.services.scheduler! };
}

test('schedules fire once per due time, missed fires collapse into one, and the run says which schedule', async (t) => {
  // Monday 2026-03-02, half a minute before nine.
  const { clock, rt, scheduler } = await startPaused(t, '2026-03-02T08:59:30.000Z');
  await apply(rt, {
    triage: `---\ntitle: Weekday triage\nenvironment: e\ntriggers:\n${sched('0 9 * * 1-5', 'mornings')}${sched('@every 1h', 'sweep')}---\nTriage the open issues.\n`,
    off: `---\nenvironment: e\nenabled: false\ntriggers:\n${sched('@hourly')}---\nNever.\n`,
  });

  scheduler.tick();
  assert.equal(scheduled(rt).length, 0, 'a schedule is armed, not fired, when it first appears');

  // A pass a few seconds after nine: the run is for nine, the time the schedule was due.
  clock.set('2026-03-02T09:00:03.250Z');
  scheduler.tick();
  scheduler.tick();
  let runs = scheduled(rt);
  assert.deepEqual(runs.map((r) => r.schedule?.schedule_id), ['tests/triage/mornings']);
  const run = runs[0];
  assert.equal(run.source, 'SCHEDULE');
  assert.deepEqual(run.creator, { type: 'automation', name: 'triage' });
  assert.equal(run.title, 'Weekday triage');
  assert.equal(run.config.environment_id, 'e');
  assert.deepEqual(run.schedule, { schedule_id: 'tests/triage/mornings', schedule_name: 'mornings', cron_schedule: '0 9 * * 1-5', scheduled_for: '2026-03-02T09:00:00.000Z' });
  assert.equal(
    run.prompt,
    `Triage the open issues.\n\n---\n\n${SCHEDULE_HEADING}\n\nThis run was started by the automation \`triage\` of factory \`tests\` because its schedule \`mornings\` (\`0 9 * * 1-5\`, UTC) was due at 2026-03-02T09:00:00.000Z.\n`,
  );

  // Three hours later: the hourly sweep missed two fires and starts one run; mornings waits for Tuesday.
  clock.set('2026-03-02T12:30:00.000Z');
  scheduler.tick();
  runs = scheduled(rt);
  assert.deepEqual(runs.map((r) => r.schedule?.schedule_id), ['tests/triage/mornings', 'tests/triage/sweep']);
  // Armed at 08:59:30 for 09:59:30; due then, at 10:59:30 and at 11:59:30: one run, for the first, that says so.
  assert.equal(runs[1].schedule?.scheduled_for, '2026-03-02T09:59:30.000Z');
  assert.match(runs[1].prompt, /because its schedule `sweep` \(`@every 1h`, UTC\) was due at 2026-03-02T09:59:30\.000Z\.\n\nThe schedule was due 3 times from 2026-03-02T09:59:30\.000Z until this run started at 2026-03-02T12:30:00\.000Z, while no scheduler was running\. Missed times start one run, not one each: this run stands for all of them\.\n$/);
  assert.equal(rt.store.schedules.nextFireAt('tests/triage/mornings'), '2026-03-03T09:00:00.000Z');
  assert.equal(rt.store.schedules.nextFireAt('tests/off/#0'), undefined, 'a disabled automation is not armed');

  // The run API shows them as SCHEDULE (Oz: SCHEDULED_AGENT), not as API runs.
  // A schedule's runs, by its id (the runs' schedule.schedule_id), as Oz's runs.list({schedule_id}) asks.
  for (const [q, n] of [
    ['source=SCHEDULE', 2],
    ['source=SCHEDULED_AGENT', 2],
    ['source=API', 0],
    [`schedule_id=${encodeURIComponent('tests/triage/mornings')}`, 1],
    [`schedule_id=${encodeURIComponent('tests/triage/sweep')}&source=SCHEDULE`, 1],
    [`schedule_id=${encodeURIComponent('tests/off/#0')}`, 0],
  ] as const) {
    const page = (await (await rt.fetch(`/api/v1/agent/runs?${q}`)).json()) as { runs: { source: string; schedule?: { schedule_id: string } }[] };
    assert.equal(page.runs.length, n, q);
    assert.ok(page.runs.every((r) => r.source === 'SCHEDULE'));
    if (q.startsWith('schedule_id=')) assert.ok(page.runs.every((r) => r.schedule?.schedule_id === decodeURIComponent(q.slice(12).split('&')[0])), q);
  }
  const empty = await rt.fetch('/api/v1/agent/runs?schedule_id=');
  assert.equal(empty.status, 400);
  assert.match(((await empty.json()) as { detail: string }).detail, /schedule_id must be 1 to 1000 characters/);
});

test('a changed schedule is armed again; a removed one is forgotten; plan shows the change', async (t) => {
  const { rt, scheduler } = await startPaused(t, '2026-03-02T08:00:00.000Z');
  await apply(rt, { nightly: `---\nenvironment: e\ntriggers:\n${sched('@daily')}---\nSweep.\n` });
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/nightly/#0'), '2026-03-03T00:00:00.000Z');

  const files = [{ path: 'factory.yaml', text: 'name: tests\n' }, ENV, { path: 'automations/nightly.md', text: `---\nenvironment: e\ntriggers:\n${sched('30 6 * * *')}---\nSweep.\n` }];
  const plan = (await (await rt.fetch('/api/v1/factories/tests/plan', { method: 'POST', json: { snapshot: compile(files).snapshot } })).json()) as {
    changes: { resource: string; action: string; diff?: { field: string }[] }[];
  };
  assert.deepEqual(plan.changes.find((c) => c.resource === 'automation')?.diff?.map((d) => d.field), ['schedules']);

  await apply(rt, { nightly: `---\nenvironment: e\ntriggers:\n${sched('30 6 * * *')}---\nSweep.\n` });
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/nightly/#0'), '2026-03-03T06:30:00.000Z');
  assert.equal(scheduled(rt).length, 0);

  await apply(rt, {});
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/nightly/#0'), undefined);
});

/**
 * An hourly schedule armed by a runtime at the clock's time, that runtime stopped, and another
 * started on the same data dir once the clock reads `restartAt` (its executor paused, one pass
 * made). `armed` says what the first one armed.
 */
async function restartedWithHourly(t: { after: (fn: () => Promise<void>) => void }, clock: FakeClock, restartAt: string): Promise<{ armed: string | undefined; again: TestRuntime }> {
  const first = await startTestRuntime({ clock, keepDataDir: true });
  first.services.executor!.pause();
  await apply(first, { hourly: `---\nenvironment: e\ntriggers:\n${sched('@hourly')}---\nCheck.\n` });
  first.services.scheduler!.tick();
  const armed = first.store.schedules.nextFireAt('tests/hourly/#0');
  await first.stop();

  clock.set(restartAt);
  const again = await startTestRuntime({ clock, dataDir: first.dataDir });
  t.after(async () => {
    await again.stop();
    rmSync(first.dataDir, { recursive: true, force: true });
  });
  again.services.executor!.pause();
  again.services.scheduler!.tick();
  return { armed, again };
}

test('a fire due while the runtime was down starts one run when it is back', async (t) => {
  const { again } = await restartedWithHourly(t, new FakeClock('2026-03-02T08:00:00.000Z'), '2026-03-02T11:15:00.000Z');
  again.services.scheduler!.tick();
  assert.deepEqual(scheduled(again).map((r) => r.schedule?.schedule_id), ['tests/hourly/#0']);
  assert.equal(again.store.schedules.nextFireAt('tests/hourly/#0'), '2026-03-02T12:00:00.000Z');
  // It says which times it stands for: nine, ten and eleven.
  const [run] = scheduled(again);
  assert.equal(run.schedule?.scheduled_for, '2026-03-02T09:00:00.000Z');
  assert.match(run.prompt, /was due at 2026-03-02T09:00:00\.000Z\.\n\nThe schedule was due 3 times from 2026-03-02T09:00:00\.000Z until this run started at 2026-03-02T11:15:00\.000Z/);
  // Through the API too, where `schedule` carries it.
  const shown = (await (await again.fetch(`/api/v1/agent/runs/${run.run_id}`)).json()) as { schedule: unknown };
  assert.deepEqual(shown.schedule, { schedule_id: 'tests/hourly/#0', schedule_name: '', cron_schedule: '@hourly', scheduled_for: '2026-03-02T09:00:00.000Z' });
});

test('a paused schedule does not fire; resumed, it is armed from now and the fires it missed are skipped', async (t) => {
  // Monday 2026-03-02 08:00.
  const { clock, rt, scheduler } = await startPaused(t, '2026-03-02T08:00:00.000Z');
  await apply(rt, { hourly: `---\nenvironment: e\ntriggers:\n${sched('@hourly', 'check')}${sched('@daily', 'other')}---\nCheck.\n` });
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/hourly/check'), '2026-03-02T09:00:00.000Z');

  // Paused just before it is due: no run at nine, nor at ten; its sibling is untouched.
  const pause = await rt.fetch(`/api/v1/agent/schedules/${encodeURIComponent('tests/hourly/check')}/pause`, { method: 'POST' });
  assert.equal(pause.status, 200, await pause.clone().text());
  for (const at of ['2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z', '2026-03-02T10:30:00.000Z']) {
    clock.set(at);
    scheduler.tick();
  }
  assert.equal(scheduled(rt).length, 0, 'a paused schedule starts no run');
  assert.equal(rt.store.schedules.nextFireAt('tests/hourly/check'), undefined, 'a paused schedule is not armed');
  assert.equal(rt.store.schedules.nextFireAt('tests/hourly/other'), '2026-03-03T00:00:00.000Z');

  // A re-apply of the same definitions keeps the pause.
  await apply(rt, { hourly: `---\nenvironment: e\ntriggers:\n${sched('@hourly', 'check')}${sched('@daily', 'other')}---\nCheck.\n` });
  scheduler.tick();
  assert.equal(scheduled(rt).length, 0);

  // Resumed at 10:30: the 09:00 and 10:00 fires are skipped, not collapsed into one run; it fires at 11:00.
  const resume = await rt.fetch(`/api/v1/agent/schedules/${encodeURIComponent('tests/hourly/check')}/resume`, { method: 'POST' });
  assert.equal(resume.status, 200, await resume.clone().text());
  scheduler.tick();
  assert.equal(scheduled(rt).length, 0, 'resuming does not make up the missed fires');
  assert.equal(rt.store.schedules.nextFireAt('tests/hourly/check'), '2026-03-02T11:00:00.000Z');
  clock.set('2026-03-02T11:00:00.000Z');
  scheduler.tick();
  assert.deepEqual(scheduled(rt).map((r) => [r.schedule?.schedule_id, r.created_at]), [['tests/hourly/check', '2026-03-02T11:00:00.000Z']]);
});

test('resumed before the scheduler saw the pause, a schedule whose time passed meanwhile does not fire late', async (t) => {
  const { clock, rt, scheduler } = await startPaused(t, '2026-03-02T08:00:00.000Z');
  await apply(rt, { hourly: `---\nenvironment: e\ntriggers:\n${sched('@hourly')}---\nCheck.\n` });
  scheduler.tick();
  // Paused and resumed with no tick between, across the 09:00 fire.
  rt.store.schedules.pause('tests/hourly/#0', '2026-03-02T08:30:00.000Z', 'test');
  clock.set('2026-03-02T09:10:00.000Z');
  assert.equal(rt.store.schedules.resume('tests/hourly/#0'), true);
  assert.equal(rt.store.schedules.resume('tests/hourly/#0'), false, 'resuming a running schedule changes nothing');
  scheduler.tick();
  assert.equal(scheduled(rt).length, 0);
  assert.equal(rt.store.schedules.nextFireAt('tests/hourly/#0'), '2026-03-02T10:00:00.000Z');
});

test('@every keeps the cadence it was armed with, however late a pass fires it', async (t) => {
  const { clock, rt, scheduler } = await startPaused(t, '2026-03-02T08:00:00.000Z');
  await apply(rt, { sweep: `---\nenvironment: e\ntriggers:\n${sched('@every 1h', 'sweep')}---\nSweep.\n` });
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/sweep/sweep'), '2026-03-02T09:00:00.000Z');
  // A pass 1.75 s late, then one 25 minutes late (a stopped runtime): the next stays on the hour.
  clock.set('2026-03-02T09:00:01.750Z');
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/sweep/sweep'), '2026-03-02T10:00:00.000Z');
  clock.set('2026-03-02T10:25:00.000Z');
  scheduler.tick();
  assert.equal(rt.store.schedules.nextFireAt('tests/sweep/sweep'), '2026-03-02T11:00:00.000Z');
  assert.equal(scheduled(rt).length, 2);
});

test('a clock that jumped ahead and came back does not silence schedules: their armed times are re-armed from now, with a warning each', async (t) => {
  const { clock, rt, scheduler } = await startPaused(t, '2026-03-02T08:59:30.000Z');
  await apply(rt, { m: `---\nenvironment: e\ntriggers:\n${sched('* * * * *', 'minute')}${sched('@every 5m', 'five')}---\nGo.\n` });
  scheduler.tick();
  // A host clock a year ahead for one pass (a bad RTC before NTP set it): both fire, and are armed for 2027.
  clock.set('2027-03-02T09:00:10.000Z');
  assert.equal(scheduler.tick().length, 2);
  assert.equal(rt.store.schedules.nextFireAt('tests/m/minute'), '2027-03-02T09:01:00.000Z');
  // Set right again: the next pass arms them from now, without firing, and says so once each.
  clock.set('2026-03-02T09:01:30.000Z');
  assert.equal(scheduler.tick().length, 0);
  assert.equal(rt.store.schedules.nextFireAt('tests/m/minute'), '2026-03-02T09:02:00.000Z');
  assert.equal(rt.store.schedules.nextFireAt('tests/m/five'), '2026-03-02T09:06:30.000Z');
  // The re-arm warnings, by their fields (the wording is for people).
  const warnings = () =>
    rt.logs.records().filter((l) => l.level === 40 && l.armed !== undefined).map((l) => ({ schedule: l.schedule, armed: l.armed, next: l.next }));
  assert.deepEqual(warnings().sort((a, b) => String(a.schedule).localeCompare(String(b.schedule))), [
    { schedule: 'tests/m/five', armed: '2027-03-02T09:04:30.000Z', next: '2026-03-02T09:06:30.000Z' },
    { schedule: 'tests/m/minute', armed: '2027-03-02T09:01:00.000Z', next: '2026-03-02T09:02:00.000Z' },
  ]);
  clock.set('2026-03-02T09:02:00.000Z');
  assert.deepEqual(scheduler.tick().map((r) => r.schedule?.schedule_id), ['tests/m/minute']);
  clock.set('2026-03-02T09:06:30.000Z');
  assert.deepEqual(scheduler.tick().map((r) => r.schedule?.schedule_id).sort(), ['tests/m/five', 'tests/m/minute']);
  assert.equal(warnings().length, 2, 'one warning per re-arm, not one per pass');
});

test('a runtime started after its clock was set back re-arms what its last run armed too far ahead', async (t) => {
  const clock = new FakeClock('2027-03-02T09:00:10.000Z');
  const { armed, again } = await restartedWithHourly(t, clock, '2026-03-02T09:15:00.000Z');
  assert.equal(armed, '2027-03-02T10:00:00.000Z');
  assert.equal(again.store.schedules.nextFireAt('tests/hourly/#0'), '2026-03-02T10:00:00.000Z');
  assert.equal(scheduled(again).length, 0);
});

test('passes arm and fire as reading every schedule afresh each pass does: shared, changed, added and removed expressions', async (t) => {
  const { clock, rt, scheduler } = await startPaused(t, '2026-03-02T08:59:30.000Z');
  const files = (defs: Record<string, [string, string][]>) =>
    Object.fromEntries(Object.entries(defs).map(([name, scheds]) => [name, `---\nenvironment: e\ntriggers:\n${scheds.map(([n, c]) => sched(c, n)).join('')}---\nGo.\n`]));
  const first: Record<string, [string, string][]> = {
    a: [['x', '*/7 * * * *'], ['y', '@every 13m']],
    b: [['x', '*/7 * * * *'], ['y', '0 9-17 * * 1-5']],
    c: [['x', '@every 1h30m'], ['y', '0 0 29 2 *'], ['z', '30 8 * * *']],
  };
  const second: Record<string, [string, string][]> = {
    a: [['x', '*/5 * * * *'], ['y', '@every 13m']],
    b: [['x', '*/7 * * * *'], ['w', '@every 45m']],
    c: first.c,
  };
  // The model: each pass reads every wanted schedule afresh, as the scheduler did before it kept
  // them between passes; a new or changed one is armed, an armed one that is due fires and moves on.
  const model = new Map<string, { cron: string; next: string }>();
  const modelPass = (defs: Record<string, [string, string][]>, now: Date): string[] => {
    const fired: string[] = [];
    const seen = new Set<string>();
    for (const [name, scheds] of Object.entries(defs)) {
      for (const [n, cron] of scheds) {
        const id = `tests/${name}/${n}`;
        seen.add(id);
        const parsed = parseSchedule(cron);
        assert.ok('value' in parsed);
        const row = model.get(id);
        if (row && row.cron === cron && row.next > now.toISOString()) continue;
        if (row && row.cron === cron) fired.push(id);
        const anchor = row && row.cron === cron ? new Date(row.next) : now;
        model.set(id, { cron, next: nextFire(parsed.value, now, anchor)!.toISOString() });
      }
    }
    for (const id of [...model.keys()]) if (!seen.has(id)) model.delete(id);
    return fired.sort();
  };

  let defs = first;
  await apply(rt, files(defs));
  // Irregular passes over two days (a pass 1 s to 50 min after the last), the definitions changing halfway.
  let seed = 7;
  for (let pass = 0; pass < 160; pass++) {
    if (pass === 80) {
      defs = second;
      await apply(rt, files(defs));
    }
    const fired = scheduler.tick().map((r) => r.schedule!.schedule_id).sort();
    assert.deepEqual(fired, modelPass(defs, clock.now()), `pass ${pass} at ${clock.now().toISOString()}`);
    for (const [id, row] of model) assert.equal(rt.store.schedules.nextFireAt(id), row.next, `${id} after pass ${pass}`);
    assert.equal(rt.store.schedules.nextFireAt('tests/b/y'), defs === first ? model.get('tests/b/y')!.next : undefined);
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    clock.advance(1_000 + (seed % 3_000_000));
  }
  assert.ok(scheduled(rt).length > 50, 'the passes fired runs, so the comparison compared something');
});

test('a snapshot from elsewhere with a schedule that does not parse, or two under one name, is refused at apply', async (t) => {
  const { rt } = await startPaused(t, '2026-03-02T08:00:00.000Z');
  const { snapshot } = compile([{ path: 'factory.yaml', text: 'name: tests\n' }, ENV, { path: 'automations/a.md', text: `---\nenvironment: e\ntriggers:\n${sched('@hourly', 'x')}${sched('@daily', 'y')}---\nA.\n` }]);
  for (const [schedules, message] of [
    [[{ name: 'x', cron: 'not a cron at all' }], /'not a cron at all' is not a valid cron schedule/],
    [[{ name: 'x', cron: '@every 3000000000h' }], /is longer than 366 days/],
    [[{ name: 'x', cron: '* * * * *' }, { name: 'x', cron: '*/2 * * * *' }], /schedule name 'x' is used twice/],
  ] as const) {
    const forged = structuredClone(snapshot!);
    forged.automations[0].schedules = schedules.map((s) => ({ ...s }));
    forged.digest = snapshotDigest(forged);
    const res = await rt.fetch('/api/v1/factories/tests/apply', { method: 'POST', json: { snapshot: forged } });
    assert.equal(res.status, 400);
    const errors = ((await res.json()) as { errors: { code: string; message: string; file: string }[] }).errors;
    assert.ok(errors.some((e) => e.code === 'automation.invalid_schedule' && e.file === 'automations/a.md' && message.test(e.message)), JSON.stringify(errors));
  }
});

test('postgres: a pause committed while this replica waits for the schedules lock is seen; the due fire starts no run', async (t) => {
  const url = await postgresUrl(t);
  if (!url) return;
  const clock = new FakeClock('2026-03-02T08:00:00.000Z');
  const rt = await startTestRuntime({ clock, postgres: url });
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  await rt.services.scheduler!.stop?.();
  await apply(rt, { hourly: `---\nenvironment: e\ntriggers:\n${sched('@hourly', 'check')}---\nCheck.\n` });
  rt.services.scheduler!.tick();
  clock.set('2026-03-02T09:00:00.000Z');
  // Another replica's turn: it holds the lock while a pause commits through another connection.
  const other = await anotherReplicaHolding(url, SCHEDULES_LOCK, {
    meanwhile: ["INSERT INTO schedule_pauses (schedule_id, paused_at, paused_by) VALUES ('tests/hourly/check', '2026-03-02T08:59:59.000Z', 'ops')"],
  });
  // Blocks on the lock until the other replica's turn ends, after the pause committed.
  rt.services.scheduler!.tick();
  await other.ended;
  assert.equal(scheduled(rt).length, 0, 'a paused schedule starts no run');
});
