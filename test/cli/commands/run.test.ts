import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runBuffered } from '../helpers.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { AGENTS, applyEnvironments, envYaml, waitForRun } from '../../runtime/routes/runs-helpers.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startCli, terminalEnv } from '../../helpers/cli.ts';


test('factory run create --wait, get, list, transcript and cancel against a real runtime', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  await applyEnvironments(rt, {
    ok: envYaml({ setup: ['echo hello from setup'], command: ['node', path.join(AGENTS, 'scripted-agent.mjs')] }),
    bad: envYaml({ command: ['node', path.join(AGENTS, 'failing-agent.mjs')] }),
  });
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cli = (...args: string[]) => runBuffered(args, env);

  const ok = await cli('run', 'create', '--prompt', 'Write notes', '--environment', 'ok', '--wait', '--poll-interval', '50');
  assert.equal(ok.code, 0, ok.err);
  const runId = /^(run_\S+) SUCCEEDED/.exec(ok.out)?.[1];
  assert.ok(runId, ok.out);
  assert.match(ok.out, new RegExp(`session: ${rt.url}/sessions/${runId}`));

  const failed = await cli('run', 'create', '--prompt', 'x', '--environment', 'bad', '--wait', '--poll-interval', '50');
  assert.equal(failed.code, 1);
  assert.match(failed.out, /FAILED: agent exited with exit code 3/);

  const get = await cli('run', 'get', runId!, '--json');
  assert.equal(JSON.parse(get.out).state, 'SUCCEEDED');

  const list = await cli('run', 'list', '--state', 'FAILED', '--json');
  assert.deepEqual(JSON.parse(list.out).runs.map((r: { state: string }) => r.state), ['FAILED']);

  const transcript = await cli('run', 'transcript', runId!, '--follow', '--poll-interval', '50');
  assert.equal(transcript.code, 0);
  assert.match(transcript.out, /\$ echo hello from setup {2}\(setup, exit 0, \d+ ms\)\n {2}hello from setup/);
  assert.match(transcript.out, /-- SUCCEEDED/);

  const cancel = await cli('run', 'cancel', runId!);
  assert.equal(cancel.code, 1);
  assert.match(cancel.err, /already finished/);

  const usage = await cli('run', 'create', '--prompt', 'x');
  assert.equal(usage.code, 2);
});

test('run transcript --follow ends when the run finishes; run create --wait exits 1 for a cancelled run', { timeout: 60_000 }, async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  // The agent runs until the test opens the gate, so --follow starts while the run is in progress.
  // The gate is a file in the run's workspace: the only place of the host a sandboxed run sees.
  const gated = ['/bin/sh', '-c', 'echo waiting; while [ ! -f "$FACTORY_WORKSPACE/gate" ]; do sleep 0.05; done; echo released'];
  const stuck = ['/bin/sh', '-c', 'while [ ! -f "$FACTORY_WORKSPACE/gate.never" ]; do sleep 0.05; done'];
  await applyEnvironments(rt, { gated: envYaml({ command: gated }), stuck: envYaml({ command: stuck }) });
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cli = (...args: string[]) => runBuffered(args, env);

  const created = await cli('run', 'create', '--prompt', 'wait for the gate', '--environment', 'gated');
  const runId = created.out.trim();
  await waitForRun(rt, runId, (r) => r.state === 'INPROGRESS');
  const follow = cli('run', 'transcript', runId, '--follow', '--poll-interval', '20');
  const waiting = cli('run', 'create', '--prompt', 'never released', '--environment', 'stuck', '--wait', '--poll-interval', '20');
  // Open the gate only once --follow has printed the agent's first line.
  type Events = { type: string; data: { text?: string } }[];
  await eventually(async () => ((await (await rt.fetch(`/api/v1/agent/runs/${runId}/transcript`)).json()) as { events: Events }).events, "the agent's first line in the transcript", {
    until: (events) => events.some((e) => e.type === 'output' && e.data.text?.includes('waiting')),
    everyMs: 20,
  });
  writeFileSync(path.join(rt.config.workDir, runId, 'gate'), '');
  const followed = await follow;
  assert.equal(followed.code, 0, followed.err);
  assert.match(followed.out, /waiting\n[^]*released\n[^]*-- SUCCEEDED\n$/);

  // The second run (newest) never ends on its own; cancel it.
  const secondId = await eventually(async () => ((await (await rt.fetch('/api/v1/agent/runs?limit=1')).json()) as { runs: { run_id: string }[] }).runs[0].run_id, 'the second run', {
    until: (id) => id !== runId,
    everyMs: 20,
  });
  assert.notEqual(secondId, runId);
  await waitForRun(rt, secondId, (r) => r.state === 'INPROGRESS');
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${secondId}/cancel`, { method: 'POST' })).status, 200);
  const cancelled = await waiting;
  assert.equal(cancelled.code, 1);
  assert.match(cancelled.out, new RegExp(`^${secondId} CANCELLED: `));
});

test('run transcript --follow | head: the command ends quietly once its reader has gone, while the run goes on', { timeout: 60_000 }, async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  // An agent that prints a line every 50 ms and never ends on its own.
  const ticking = ['/bin/sh', '-c', 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.05; done'];
  await applyEnvironments(rt, { ticking: envYaml({ command: ticking }) });
  const created = await runBuffered(['run', 'create', '--prompt', 'tick', '--environment', 'ticking'], { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey });
  const runId = created.out.trim();
  await waitForRun(rt, runId, (r) => r.state === 'INPROGRESS');

  // A real child with stdout on a pipe; the reader leaves after the first tick, as `head -1` does.
  const follow = startCli(['run', 'transcript', runId, '--follow', '--poll-interval', '20'], { env: terminalEnv({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }) });
  await follow.waitFor(() => /tick 1\n/.test(follow.stdout()), 'the first tick');
  follow.child.stdout.destroy();
  assert.equal(await follow.closed, 0);
  assert.equal(follow.stderr(), '');
  assert.equal(((await (await rt.fetch(`/api/v1/agent/runs/${runId}`)).json()) as { state: string }).state, 'INPROGRESS', 'it ended for its reader, not for the run');
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${runId}/cancel`, { method: 'POST' })).status, 200);
});
