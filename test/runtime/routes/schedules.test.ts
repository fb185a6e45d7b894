/**
 * GET /api/v1/agent/schedules (docs/api.md#schedules) through Oz's own SDK, and `factory automation
 * list` showing each automation's schedules with the next fire time, against a real runtime.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OzAPI from 'oz-agent-sdk';
import { compile } from '../../../cli/compiler/compile.ts';
import { runCli } from '../../../cli/main.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { bufferIO } from '../../cli/helpers.ts';
import { startTestRuntime } from '../helpers.ts';

const sched = (cron: string, name?: string) =>
  `  - provider: schedule\n    event: cron_fired\n    schedule:\n${name ? `      name: ${name}\n` : ''}      cron: "${cron}"\n`;

test('schedules in Oz\'s shape: next_run, last_ran, enabled; a foreign factory\'s are hidden; automation list shows them', async (t) => {
  // Monday 2026-03-02, half a minute before nine.
  const clock = new FakeClock('2026-03-02T08:59:30.000Z');
  const rt = await startTestRuntime({ clock });
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  const apply = async (factory: string, automations: Record<string, string>) => {
    const files = [
      { path: 'factory.yaml', text: `name: ${factory}\n` },
      { path: `environments/${factory}-env.yaml`, text: 'agent:\n  command: ["true"]\n' },
      ...Object.entries(automations).map(([name, text]) => ({ path: `automations/${name}.md`, text: text.replace('ENV', `${factory}-env`) })),
    ];
    const { snapshot, diagnostics } = compile(files);
    assert.ok(snapshot, JSON.stringify(diagnostics));
    const res = await rt.fetch(`/api/v1/factories/${factory}/apply`, { method: 'POST', json: { snapshot } });
    assert.equal(res.status, 200, await res.text());
  };
  await apply('tests', {
    triage: `---\ntitle: Weekday triage\nenvironment: ENV\ntriggers:\n${sched('0 9 * * 1-5', 'mornings')}${sched('@every 1h', 'sweep')}---\nTriage the open issues.\n`,
    off: `---\nenvironment: ENV\nenabled: false\ntriggers:\n${sched('@daily')}---\nNever.\n`,
  });
  await apply('elsewhere', { theirs: `---\nenvironment: ENV\ntriggers:\n${sched('@hourly')}---\nNot yours.\n` });

  const { raw } = rt.store.keys.create({ name: 'ops', kind: 'agent', scopes: ['manage'], factories: ['tests'] });
  const client = new OzAPI({ apiKey: raw, baseURL: `${rt.url}/api/v1`, maxRetries: 0 });

  // Sorted by name, as Oz sorts them; not armed yet, next_run is the next time after now.
  let { schedules } = await client.agent.schedules.list();
  assert.deepEqual(schedules.map((s) => [s.id, s.name, s.cron_schedule, s.enabled, s.history?.next_run, s.history?.last_ran]), [
    ['tests/triage/mornings', 'mornings', '0 9 * * 1-5', true, '2026-03-02T09:00:00.000Z', null],
    ['tests/off/#0', 'off', '@daily', false, null, null],
    ['tests/triage/sweep', 'sweep', '@every 1h', true, '2026-03-02T09:59:30.000Z', null],
  ]);
  const mornings = schedules[0];
  assert.equal(mornings.prompt, 'Triage the open issues.');
  assert.deepEqual(mornings.agent_config, { environment_id: 'tests-env' });
  assert.deepEqual(mornings.scope, { type: 'Team' });
  assert.ok(!Number.isNaN(Date.parse(mornings.created_at)) && !Number.isNaN(Date.parse(mornings.updated_at)));

  // The scheduler arms them, then mornings fires at nine and is armed for Tuesday.
  const scheduler = rt.services.scheduler!;
  scheduler.tick();
  clock.set('2026-03-02T09:00:00.000Z');
  const ticked = scheduler.tick();
  assert.deepEqual(ticked.map((r) => r.schedule?.schedule_id).sort(), ['elsewhere/theirs/#0', 'tests/triage/mornings']);
  const fired = ticked.find((r) => r.schedule?.schedule_id === 'tests/triage/mornings')!;
  const one = await client.agent.schedules.retrieve('tests/triage/mornings');
  assert.equal(one.history?.next_run, '2026-03-03T09:00:00.000Z');
  assert.equal(one.history?.last_ran, fired.created_at);

  // Another factory's schedule: not listed, and the same 404 as an id that does not exist.
  ({ schedules } = await client.agent.schedules.list());
  assert.ok(schedules.some((s) => s.id === 'tests/triage/mornings'), 'the own schedule is listed, so the check below has something to check');
  assert.ok(schedules.every((s) => s.id.startsWith('tests/')));
  for (const id of ['elsewhere/theirs/#0', 'tests/nothing/#0']) {
    const res = await rt.fetch(`/api/v1/agent/schedules/${encodeURIComponent(id)}`, { key: raw });
    assert.equal(res.status, 404);
    const problem = (await res.json()) as { code: string; detail: string };
    assert.equal(problem.code, 'resource_not_found');
    assert.match(problem.detail, new RegExp(`^schedule ${id} does not exist`));
  }

  // Oz's create, update and delete are not served: schedules are definitions (docs/api.md#schedules).
  for (const [method, path] of [['POST', '/api/v1/agent/schedules'], ['PUT', `/api/v1/agent/schedules/${encodeURIComponent('tests/triage/mornings')}`], ['DELETE', `/api/v1/agent/schedules/${encodeURIComponent('tests/triage/mornings')}`]]) {
    const res = await rt.fetch(path, { method, json: method === 'DELETE' ? undefined : { cron_schedule: '@daily' } });
    assert.equal(res.status, 405, `${method} ${path}`);
    assert.equal(((await res.json()) as { code: string }).code, 'method_not_allowed');
    assert.deepEqual(res.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD']);
  }

  // The CLI: a SCHEDULES column with the next fire time, and the schedules in --json.
  const io = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey });
  assert.equal(await runCli(['automation', 'list', '--factory', 'tests'], io), 0, io.err);
  const lines = io.out.split('\n');
  assert.match(lines[0], /^FACTORY\s+NAME\s+STATE\s+ENVIRONMENT\s+WEBHOOKS\s+SCHEDULES$/);
  assert.match(io.out, /tests\s+off\s+disabled\s+tests-env\s+-\s+@daily \(not armed\)/);
  assert.match(io.out, /tests\s+triage\s+enabled\s+tests-env\s+-\s+0 9 \* \* 1-5 \(next 2026-03-03 09:00 UTC\), @every 1h \(next 2026-03-02 09:59 UTC\)/);
  const json = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey });
  assert.equal(await runCli(['automation', 'list', '--factory', 'tests', '--json'], json), 0, json.err);
  const listed = JSON.parse(json.out) as { name: string; schedules?: { id: string; history: { next_run: string | null } }[] }[];
  assert.deepEqual(listed.find((a) => a.name === 'triage')!.schedules!.map((s) => [s.id, s.history.next_run]), [
    ['tests/triage/mornings', '2026-03-03T09:00:00.000Z'],
    ['tests/triage/sweep', '2026-03-02T09:59:30.000Z'],
  ]);
});

test('pause and resume through Oz\'s SDK and the CLI: enabled and paused follow, a foreign or unknown schedule is a 404', async (t) => {
  const clock = new FakeClock('2026-03-02T08:59:30.000Z');
  const rt = await startTestRuntime({ clock });
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  for (const factory of ['tests', 'elsewhere']) {
    const files = [
      { path: 'factory.yaml', text: `name: ${factory}\n` },
      { path: `environments/${factory}-env.yaml`, text: 'agent:\n  command: ["true"]\n' },
      { path: 'automations/triage.md', text: `---\nenvironment: ${factory}-env\ntriggers:\n${sched('0 9 * * 1-5', 'mornings')}---\nTriage.\n` },
    ];
    const { snapshot, diagnostics } = compile(files);
    assert.ok(snapshot, JSON.stringify(diagnostics));
    const res = await rt.fetch(`/api/v1/factories/${factory}/apply`, { method: 'POST', json: { snapshot } });
    assert.equal(res.status, 200, await res.text());
  }
  rt.services.scheduler!.tick();
  const { raw } = rt.store.keys.create({ name: 'ops', kind: 'agent', scopes: ['manage'], factories: ['tests'] });
  const client = new OzAPI({ apiKey: raw, baseURL: `${rt.url}/api/v1`, maxRetries: 0 });

  const paused = await client.agent.schedules.pause('tests/triage/mornings');
  assert.equal(paused.enabled, false);
  assert.equal(paused.history?.next_run, null);
  assert.deepEqual((paused as unknown as { paused: unknown }).paused, { at: '2026-03-02T08:59:30.000Z', by: 'ops' });
  // Pausing again keeps the first pause.
  clock.set('2026-03-02T08:59:40.000Z');
  const again = await client.agent.schedules.pause('tests/triage/mornings');
  assert.deepEqual((again as unknown as { paused: unknown }).paused, { at: '2026-03-02T08:59:30.000Z', by: 'ops' });
  // One line for the change (the dev feed prints it), none for the repeat.
  assert.deepEqual(rt.logs.records().filter((l) => String(l.msg).startsWith('schedule ')).map((l) => l.msg), ['schedule tests/triage/mornings paused by ops']);
  const listed = (await client.agent.schedules.list()).schedules;
  assert.deepEqual(listed.map((s) => [s.id, s.enabled]), [['tests/triage/mornings', false]]);

  // The other factory's schedule exists, and still answers like an unknown one; it stays running.
  for (const id of ['elsewhere/triage/mornings', 'tests/nothing/#0']) {
    for (const verb of ['pause', 'resume']) {
      const res = await rt.fetch(`/api/v1/agent/schedules/${encodeURIComponent(id)}/${verb}`, { method: 'POST', key: raw });
      assert.equal(res.status, 404, `${verb} ${id}`);
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'resource_not_found', `${verb} ${id}`);
      assert.match(problem.detail, new RegExp(`^schedule ${id} does not exist`));
    }
  }
  assert.equal(rt.store.schedules.paused().has('elsewhere/triage/mornings'), false);

  // The CLI shows it paused, and resumes it: armed again from now, so for today's nine.
  const io = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
  assert.equal(await runCli(['automation', 'list'], io), 0, io.err);
  assert.match(io.out, /tests\s+triage\s+enabled\s+tests-env\s+-\s+0 9 \* \* 1-5 \(paused\)/);
  const resumed = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
  assert.equal(await runCli(['automation', 'resume', 'tests/triage/mornings'], resumed), 0, resumed.err);
  assert.equal(resumed.out, 'Schedule tests/triage/mornings resumed: 0 9 * * 1-5 (next 2026-03-02 09:00 UTC).\n');
  const one = await client.agent.schedules.retrieve('tests/triage/mornings');
  assert.equal(one.enabled, true);
  assert.equal((one as unknown as { paused: unknown }).paused, null);
  const pausedCli = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
  assert.equal(await runCli(['automation', 'pause', 'tests/triage/mornings'], pausedCli), 0, pausedCli.err);
  assert.equal(pausedCli.out, 'Schedule tests/triage/mornings paused: 0 9 * * 1-5 (paused).\n');
  // Again, and resumed twice: nothing changes, and the CLI says so rather than claim a change.
  const pausedAgain = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
  assert.equal(await runCli(['automation', 'pause', 'tests/triage/mornings'], pausedAgain), 0, pausedAgain.err);
  assert.equal(pausedAgain.out, 'Schedule tests/triage/mornings is already paused: 0 9 * * 1-5 (paused).\n');
  for (const expected of ['resumed', 'is already running']) {
    const io2 = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
    assert.equal(await runCli(['automation', 'resume', 'tests/triage/mornings'], io2), 0, io2.err);
    assert.equal(io2.out, `Schedule tests/triage/mornings ${expected}: 0 9 * * 1-5 (next 2026-03-02 09:00 UTC).\n`);
  }

  // A malformed id is a one-sentence usage error; an unknown one points at the command that lists them.
  const bad = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
  assert.equal(await runCli(['automation', 'pause', 'mornings'], bad), 2);
  assert.match(bad.err, /a schedule id is <factory>\/<automation>\/<schedule name, or #index>, got "mornings"/);
  const unknown = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: raw });
  assert.equal(await runCli(['automation', 'resume', 'elsewhere/triage/mornings'], unknown), 1);
  assert.equal(
    unknown.err,
    "error: no schedule has the id 'elsewhere/triage/mornings' (or its factory is not one your key may manage); see the ids with `factory automation list --json`.\n",
  );
});

test('last_ran is per schedule: a rare schedule beside a frequent one keeps its last run; a retry of its run does not count', async (t) => {
  const clock = new FakeClock('2026-03-02T08:59:30.000Z');
  const rt = await startTestRuntime({ clock });
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  const files = [
    { path: 'factory.yaml', text: 'name: tests\n' },
    { path: 'environments/e.yaml', text: 'agent:\n  command: ["true"]\n' },
    { path: 'automations/m.md', text: `---\nenvironment: e\ntriggers:\n${sched('0 9 * * *', 'daily')}${sched('* * * * *', 'minute')}---\nGo.\n` },
  ];
  const { snapshot, diagnostics } = compile(files);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  assert.equal((await rt.fetch('/api/v1/factories/tests/apply', { method: 'POST', json: { snapshot } })).status, 200);
  const scheduler = rt.services.scheduler!;
  scheduler.tick();
  clock.set('2026-03-02T09:00:00.000Z');
  const [daily] = scheduler.tick().filter((r) => r.schedule?.schedule_id === 'tests/m/daily');
  assert.ok(daily);
  const history = async () =>
    Object.fromEntries(((await (await rt.fetch('/api/v1/agent/schedules')).json()) as { schedules: { id: string; history: { last_ran: string | null } }[] }).schedules.map((s) => [s.id, s.history.last_ran]));
  assert.deepEqual(await history(), { 'tests/m/daily': '2026-03-02T09:00:00.000Z', 'tests/m/minute': '2026-03-02T09:00:00.000Z' });

  // The daily run fails and is retried at 09:30: the retry carries the schedule, but the schedule did not start it.
  while (rt.store.runs.claimNext()?.run_id !== daily.run_id);
  rt.store.runs.finish(daily.run_id, 'FAILED', { statusMessage: 'the agent exited with 1' });
  clock.set('2026-03-02T09:30:00.000Z');
  const retry = await rt.fetch(`/api/v1/agent/runs/${daily.run_id}/retry`, { method: 'POST' });
  assert.equal(retry.status, 201, await retry.clone().text());
  assert.equal(((await retry.json()) as { schedule: { schedule_id: string } }).schedule.schedule_id, 'tests/m/daily');

  // 150 minutes of the minutely schedule's runs after it: the daily one's last run is still found.
  for (let i = 0; i < 150; i++) {
    clock.advance(60_000);
    scheduler.tick();
  }
  assert.deepEqual(await history(), { 'tests/m/daily': '2026-03-02T09:00:00.000Z', 'tests/m/minute': '2026-03-02T12:00:00.000Z' });
  const one = (await (await rt.fetch(`/api/v1/agent/schedules/${encodeURIComponent('tests/m/daily')}`)).json()) as { history: { last_ran: string | null } };
  assert.equal(one.history.last_ran, '2026-03-02T09:00:00.000Z');
});
