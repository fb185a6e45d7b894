import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compileDir } from '../../../cli/compiler/index.ts';
import { EXAMPLE_AGENTS, startTestRuntime } from '../helpers.ts';
import { testExecutor } from '../executor/helpers.ts';
import { waitForRun } from '../routes/runs-helpers.ts';
import { createSecret, deliverGithub, deliveryRuns, PR_OPENED } from './helpers.ts';

/**
 * A Warp-layout repo with no environments/ runs end to end (docs/definitions.md#warp-agents-run-here):
 * the reviewer's claude harness is the agent command, the runner's setupCommands are the setup,
 * factory.yaml's repositories are cloned from --repository-base (a local mirror here), the agent's
 * body and skills come before the prompt, and its managed secret is ANTHROPIC_API_KEY. `claude` is
 * a stand-in installed outside the sandbox's PATH, in a directory the operator binds read-only.
 */

const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/warp-e2e');
const UID = 'wh_warpee2ewarpee2ewarpee2eab';
const KEY_VALUE = 'sk-ant-test-0123456789abcdef';

/** A recorded Claude Code stream-json session, plus what the stand-in was given (the prompt, its model, whether the key is set). */
const STAND_IN_CLAUDE = `#!/usr/bin/env node
import { readFileSync } from 'node:fs';
const prompt = readFileSync(0, 'utf8');
const args = process.argv.slice(2);
const model = args[args.indexOf('--model') + 1];
const session_id = 'recorded-session';
const lines = [
  { type: 'system', subtype: 'init', session_id, model, tools: ['Bash'] },
  { type: 'assistant', session_id, message: { role: 'assistant', content: [{ type: 'text', text: 'PROMPT RECEIVED:\\n' + prompt }] } },
  { type: 'assistant', session_id, message: { role: 'assistant', content: [{ type: 'text', text: 'api key set: ' + (process.env.ANTHROPIC_API_KEY ? 'yes, ' + process.env.ANTHROPIC_API_KEY.length + ' characters' : 'no') }] } },
  { type: 'assistant', session_id, message: { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'cat setup-proof.txt' } }] } },
  { type: 'user', session_id, message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: readFileSync('setup-proof.txt', 'utf8') }] } },
  { type: 'result', subtype: 'success', is_error: false, result: 'Reviewed.', num_turns: 2, duration_ms: 7, session_id },
];
for (const l of lines) process.stdout.write(JSON.stringify(l) + '\\n');
`;

function scratch(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-warp-'));
  chmodSync(dir, 0o755);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `<dir>/mirror/acme/app`: the mirror of acme/app, a git repo with one commit. */
function mirror(dir: string): string {
  const repo = path.join(dir, 'mirror', 'acme', 'app');
  mkdirSync(repo, { recursive: true });
  writeFileSync(path.join(repo, 'README.md'), '# acme/app\n');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', ...args], { cwd: repo, stdio: 'pipe' });
  git('init', '--quiet');
  git('add', '.');
  git('commit', '--quiet', '-m', 'init');
  return path.join(dir, 'mirror');
}

type Event = { type: string; data: Record<string, any> };

test('a Warp repo: a signed delivery runs the agent\'s claude harness with the runner\'s setup, the repositories, its instructions and its key', async (t) => {
  const dir = scratch(t);
  const base = mirror(dir);
  const install = path.join(dir, 'claude-install');
  mkdirSync(path.join(install, 'bin'), { recursive: true });
  writeFileSync(path.join(install, 'bin', 'claude'), STAND_IN_CLAUDE, { mode: 0o755 });

  const rt = await startTestRuntime({
    flags: { sandboxRoBind: [EXAMPLE_AGENTS, install], repositoryBase: base },
    // Only an unsandboxed runtime (a laptop without bubblewrap) finds it through PATH.
    env: { PATH: `${path.join(install, 'bin')}:${process.env.PATH}` },
  });
  t.after(() => rt.stop());
  await createSecret(rt);
  const { snapshot, diagnostics } = await compileDir(FIXTURE);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  // The harness's key is a team secret the factory must be able to use, as an environment's would be.
  const refused = await rt.fetch('/api/v1/factories/warp-e2e/apply', { method: 'POST', json: { snapshot } });
  assert.equal(refused.status, 400, await refused.clone().text());
  const { errors } = (await refused.json()) as { errors: { file: string; pointer: string; code: string }[] };
  assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code]), [['agents/reviewer/agent.md', '/harness/auth/secretName', 'secret.not_found']]);
  const secret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'anthropic-key', value: KEY_VALUE } });
  assert.equal(secret.status, 201, await secret.text());
  const applied = await rt.fetch('/api/v1/factories/warp-e2e/apply', { method: 'POST', json: { snapshot } });
  assert.equal(applied.status, 200, await applied.text());

  // The payload filter: action opened starts the reviewer.
  const { res, deliveryId } = await deliverGithub(rt, PR_OPENED, { uid: UID });
  assert.equal(res.status, 202);
  const started = await deliveryRuns(rt, deliveryId, UID);
  assert.deepEqual(started.map((r) => r.automation), ['review-pull-request']);
  const run = await waitForRun(rt, started[0].run_id);
  assert.equal(run.state, 'SUCCEEDED', run.status_message);
  assert.equal(run.config.environment_id, 'agent:warp-e2e/reviewer');
  // The run's prompt is the automation's; the instructions are put before it for the agent only.
  assert.ok(run.prompt.startsWith('Review the pull request described in `event-payload.json`.'));

  const { events } = (await (await rt.fetch(`/api/v1/agent/runs/${run.run_id}/transcript`)).json()) as { events: Event[] };
  const commands = events.filter((e) => e.type === 'command');
  // factory.yaml's repositories, from the mirror.
  const clone = commands.find((c) => c.data.phase === 'repo')!;
  assert.deepEqual(clone.data.argv.slice(0, 5), ['git', 'clone', '--quiet', '--', path.join(base, 'acme', 'app')]);
  assert.equal(clone.data.exit_code, 0);
  // The runner's setupCommands, in order, in the workspace with the clone.
  assert.deepEqual(commands.filter((c) => c.data.phase === 'setup').map((c) => [c.data.text, c.data.exit_code]), [
    ['echo "setup ran in $PWD" > setup-proof.txt', 0],
    ['ls app', 0],
  ]);
  assert.match(commands.find((c) => c.data.text === 'ls app')!.data.output, /README\.md/);
  // The harness command, with the agent's model.
  const agent = commands.find((c) => c.data.phase === 'agent')!;
  // Found in the operator's bind (the sandbox's PATH does not have it); unsandboxed, through PATH.
  assert.equal(agent.data.argv[0], testExecutor() === 'sandbox' ? path.join(install, 'bin', 'claude') : 'claude');
  assert.deepEqual(agent.data.argv.slice(1), ['-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5']);

  // The stream-json reader turned the session into messages.
  const messages = events.filter((e) => e.type === 'message').map((e) => e.data);
  assert.ok(messages.every((m) => m.format === 'claude-stream-json'));
  assert.deepEqual(messages.map((m) => m.kind), ['system', 'text', 'text', 'tool_use', 'tool_result', 'result']);
  assert.equal(messages[0].model, 'claude-sonnet-4-5');
  const prompt: string = messages[1].text;
  // The agent's body, then every agent's skill and its own, then the automation's prompt.
  const order = ['You are the reviewer.', '# Skills', '## house-style', 'Short sentences.', '## review-checklist', 'Check tests, naming', 'Review the pull request'];
  const at = order.map((s) => prompt.indexOf(s));
  assert.ok(at.every((i, k) => i >= 0 && (k === 0 || i > at[k - 1])), `${JSON.stringify(at)} in ${prompt}`);
  assert.equal(messages[2].text, `api key set: yes, ${KEY_VALUE.length} characters`);
  assert.match(messages[4].text, /^setup ran in \//);
  assert.equal(messages[5].text, 'Reviewed.');
  assert.ok(!JSON.stringify(events).includes(KEY_VALUE), 'the key is never in the transcript');

  // An automation with its own codex harness: its environment, and codex is installed nowhere here.
  const closed = Buffer.from(JSON.stringify({ ...JSON.parse(PR_OPENED.toString('utf8')), action: 'closed' }));
  const second = await deliverGithub(rt, closed, { uid: UID });
  assert.equal(second.res.status, 202);
  const [codexRun] = await deliveryRuns(rt, second.deliveryId, UID);
  assert.equal(codexRun.automation, 'closed-with-codex');
  const failed = await waitForRun(rt, codexRun.run_id);
  assert.equal(failed.state, 'FAILED');
  assert.equal(failed.config.environment_id, 'automation:warp-e2e/closed-with-codex');
  assert.equal(failed.error_code, 'agent_not_found');
  assert.match(failed.status_message, /^agent program "codex" was not found: the codex harness of agent "reviewer" needs it/);

  // The run API may name the agent's environment; a malformed id is a 400 naming the field.
  const created = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'Review the last commit.', config: { environment_id: 'agent:warp-e2e/reviewer' } } });
  assert.equal(created.status, 201, await created.clone().text());
  const apiRun = await waitForRun(rt, ((await created.json()) as { run_id: string }).run_id);
  assert.equal(apiRun.state, 'SUCCEEDED', apiRun.status_message);
  const bad = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'x', config: { environment_id: 'agent:Warp/x' } } });
  assert.equal(bad.status, 400);
  const problem = (await bad.clone().json()) as { code: string; errors: { pointer: string }[] };
  assert.equal(problem.code, 'invalid_request');
  assert.deepEqual(problem.errors.map((e) => e.pointer), ['/config/environment_id']);
  assert.match(await bad.text(), /environment_id/);
});
