import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomInt } from 'node:crypto';
import path from 'node:path';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { isGone, processesWith } from '../executor/helpers.ts';
import { AGENTS, applyEnvironments, createRun, envYaml, makeRepo, waitForRun } from './runs-helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

async function runtime(
  t: { after: (fn: () => Promise<void> | void) => void },
  envs: Record<string, string>,
  before: (rt: TestRuntime) => void = () => {},
): Promise<TestRuntime> {
  const rt = await startTestRuntime({ flags: { maxConcurrentRuns: 4 } });
  t.after(() => rt.stop());
  before(rt);
  await applyEnvironments(rt, envs);
  return rt;
}

async function transcript(rt: TestRuntime, runId: string) {
  const res = await rt.fetch(`/api/v1/agent/runs/${runId}/transcript`);
  assert.equal(res.status, 200);
  return (await res.json()) as { events: { seq: number; type: string; data: Record<string, any> }[]; next_after: number; has_more: boolean };
}

test('create → 201 QUEUED at once → SUCCEEDED with a session link and a full transcript', async (t) => {
  const repo = makeRepo(t);
  const rt = await runtime(t, {
    ok: envYaml({ repo, setup: ['echo preparing', 'git -C app log -1 --oneline'], command: ['node', path.join(AGENTS, 'scripted-agent.mjs')], env: { GREETING: 'hi' } }),
  });
  const { res, body } = await createRun(rt, { prompt: 'Add a note.', config: { environment_id: 'ok' }, title: 'Note', metadata: { ticket: 7 } });
  assert.equal(res.status, 201);
  assert.equal(body.state, 'QUEUED');
  assert.equal(res.headers.get('location'), `/api/v1/agent/runs/${body.run_id}`);
  assert.deepEqual(body.config, { environment_id: 'ok' });
  assert.deepEqual(body.creator, { type: 'user', name: 'admin' });
  assert.equal(body.source, 'API');
  assert.equal(body.session_link, null);

  const run = await waitForRun(rt, body.run_id);
  assert.equal(run.state, 'SUCCEEDED', JSON.stringify(run));
  assert.equal(run.session_link, `${rt.url}/sessions/${body.run_id}`);
  assert.ok(run.started_at && run.finished_at);
  assert.equal(run.status_message, null);

  const { events } = await transcript(rt, body.run_id);
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
  const commands = events.filter((e) => e.type === 'command').map((e) => [e.data.phase, e.data.text, e.data.exit_code]);
  assert.deepEqual(commands.slice(1), [
    ['setup', 'echo preparing', 0],
    ['setup', 'git -C app log -1 --oneline', 0],
    ['agent', `node ${path.join(AGENTS, 'scripted-agent.mjs')}`, 0],
  ]);
  assert.match(events.filter((e) => e.type === 'output').map((e) => e.data.text).join(''), /first line: Add a note\./);
  const change = events.find((e) => e.type === 'file_change');
  assert.deepEqual([change?.data.repo, change?.data.path, change?.data.kind], ['app', 'AGENT_NOTES.md', 'added']);
  const states = events.filter((e) => e.type === 'state').map((e) => e.data.to);
  assert.deepEqual(states, ['INPROGRESS', 'SUCCEEDED']);

  const after = (await (await rt.fetch(`/api/v1/agent/runs/${body.run_id}/transcript?after=${events.length - 1}`)).json()) as { events: { seq: number }[] };
  assert.deepEqual(after.events.map((e: { seq: number }) => e.seq), [events.length]);

  // The session link: JSON for a Bearer request, an HTML page (asking for a key) otherwise.
  const json = await rt.fetch(`/sessions/${body.run_id}`);
  assert.equal(json.status, 200);
  assert.equal(((await json.json()) as { events: unknown[] }).events.length, events.length);
  const page = await rt.fetch(`/sessions/${body.run_id}`, { key: null });
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  const html = await page.text();
  // The page's script is the dashboard module session.js; nothing inline runs.
  // Relative, as every URL of the dashboard is: it also loads behind a proxy that mounts the runtime at a path.
  assert.match(html, /<script type="module" src="\.\.\/dashboard\/session\.js"><\/script>/);
  assert.equal(html.match(/<script/g)?.length, 1);
  assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self';/);
  assert.equal((await rt.fetch('/dashboard/session.js', { key: null })).status, 200);
  assert.equal((await rt.fetch(`/sessions/${body.run_id}`, { key: 'fk_wrong' })).status, 401);

  // A SUCCEEDED run cannot be cancelled, and stays as it was.
  const cancel = await rt.fetch(`/api/v1/agent/runs/${body.run_id}/cancel`, { method: 'POST' });
  assert.equal(cancel.status, 400);
  assert.equal(((await cancel.json()) as { code: string }).code, 'operation_not_supported');
  assert.deepEqual(await (await rt.fetch(`/api/v1/agent/runs/${body.run_id}`)).json(), run);
});

test('a failing agent, a failing setup, a missing program and a timeout each end FAILED naming the cause', async (t) => {
  const rt = await runtime(t, {
    'fail-agent': envYaml({ command: ['node', path.join(AGENTS, 'failing-agent.mjs')] }),
    'fail-setup': envYaml({ setup: ['exit 4'], command: ['true'] }),
    missing: envYaml({ command: ['factory-missing-agent-xyz'] }),
    slow: envYaml({ command: ['sleep', '30'], timeout: '1s' }),
    'no-secret': envYaml({ command: ['true'], env: { TOKEN: { secret: 'NOT_SET' } } }),
  }, (rt) => rt.store.secrets.create('NOT_SET', null)); // pending: it exists, with no value yet
  const expected: Record<string, [string, string]> = {
    'fail-agent': ['agent_failed', 'agent exited with exit code 3'],
    'fail-setup': ['setup_failed', 'setup command "exit 4" failed with exit code 4'],
    missing: ['agent_not_found', 'agent program "factory-missing-agent-xyz" was not found'],
    slow: ['agent_timeout', 'agent timed out after 1s'],
    'no-secret': ['environment_invalid', 'the team secret "NOT_SET" for TOKEN of environment "no-secret" does not exist or has no value'],
  };
  const ids = new Map<string, string>();
  for (const env of Object.keys(expected)) ids.set(env, (await createRun(rt, { prompt: 'go', config: { environment_id: env } })).body.run_id);
  for (const [env, [code, message]] of Object.entries(expected)) {
    const run = await waitForRun(rt, ids.get(env)!);
    assert.deepEqual([run.state, run.error_code, run.status_message, run.retryable], ['FAILED', code, message, false], env);
    assert.equal(run.session_link, `${rt.url}/sessions/${run.run_id}`, 'a FAILED run that started links its session');
  }
});

test('environment secrets are resolved at run start and reach the agent', async (t) => {
  const rt = await runtime(t, { secret: envYaml({ command: ['/bin/sh', '-c', 'printf %s "$TOKEN" | sha256sum'], env: { TOKEN: { secret: 'RUN_TOKEN' } } }) }, (rt) =>
    rt.store.secrets.create('RUN_TOKEN', 's3cr3t-value'),
  );
  const { body } = await createRun(rt, { prompt: 'go', config: { environment_id: 'secret' } });
  assert.equal((await waitForRun(rt, body.run_id)).state, 'SUCCEEDED');
  const { events } = await transcript(rt, body.run_id);
  const output = events.filter((e) => e.type === 'output').map((e) => e.data.text).join('');
  assert.match(output, new RegExp(createHash('sha256').update('s3cr3t-value').digest('hex')));
  assert.ok(!JSON.stringify(events).includes('s3cr3t-value'));
});

test('cancel of a running run kills its process group and ends CANCELLED; cancel of a finished run is 400', async (t) => {
  // A sleep no other test starts, found by its command line (the sandbox's own pids mean nothing here).
  const sleep = `sleep ${randomInt(3000, 9000)}`;
  const rt = await runtime(t, { sleeper: envYaml({ command: ['/bin/sh', '-c', `${sleep} & wait`] }) });
  const { body } = await createRun(rt, { prompt: 'sleep', config: { environment_id: 'sleeper' } });
  await eventually(() => processesWith(sleep).length === 1, 'the grandchild sleep');
  const [pid] = processesWith(sleep);
  const res = await rt.fetch(`/api/v1/agent/runs/${body.run_id}/cancel`, { method: 'POST' });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { run_id: body.run_id });
  const run = await waitForRun(rt, body.run_id);
  assert.deepEqual([run.state, run.error_code, run.status_message, run.retryable, run.session_link], ['CANCELLED', 'cancelled', 'the run was cancelled', false, null]);
  await eventually(() => isGone(pid), 'the grandchild to be gone');

  const again = await rt.fetch(`/api/v1/agent/runs/${body.run_id}/cancel`, { method: 'POST' });
  assert.equal(again.status, 400);
  assert.equal(((await again.json()) as { code: string }).code, 'operation_not_supported');
  assert.equal((await rt.fetch('/api/v1/agent/runs/run_unknown/cancel', { method: 'POST' })).status, 404);
});

test('cancel of a QUEUED run ends it at once', async (t) => {
  const rt = await runtime(t, { ok: envYaml({ command: ['true'] }) });
  rt.services.executor!.pause();
  const { body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' } });
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${body.run_id}/cancel`, { method: 'POST' })).status, 200);
  const run = (await (await rt.fetch(`/api/v1/agent/runs/${body.run_id}`)).json()) as Record<string, unknown>;
  assert.deepEqual([run.state, run.status_message, run.started_at], ['CANCELLED', 'the run was cancelled before it started', null]);
});

test('runs are attributed to the key: personal → user, agent → agent', async (t) => {
  const rt = await runtime(t, { ok: envYaml({ command: ['true'] }) });
  rt.services.executor!.pause();
  const agentKey = rt.store.keys.create({ name: 'ci-bot', kind: 'agent', scopes: ['runs'] }).raw;
  const { res, body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' } }, { key: agentKey });
  assert.equal(res.status, 201);
  assert.deepEqual(body.creator, { type: 'agent', name: 'ci-bot' });
  const manageOnly = rt.store.keys.create({ name: 'm', kind: 'personal', scopes: ['manage'] }).raw;
  const denied = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' } }, { key: manageOnly });
  assert.equal(denied.res.status, 403);
});
