import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compile, type SourceFile } from '../../../cli/compiler/index.ts';

/** Cross-file rules (cli/compiler/rules.ts) whose messages carry a hint. */

const automation = (environment: string): SourceFile => ({
  path: 'automations/triage.md',
  text: `---\nenvironment: ${environment}\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [wh_aaaaaaaaaaaaaaaaaaaaaaaaaa]\n---\nTriage it.\n`,
});
const repo = (environment: string): SourceFile[] => [
  { path: 'factory.yaml', text: 'name: shop\n' },
  { path: 'environments/sandbox.yaml', text: 'agent:\n  command: [node, agent.mjs]\n' },
  automation(environment),
];

test('an environment that is a typo of one the repo defines gets a did-you-mean, at the value', () => {
  const d = compile(repo('sandbx')).diagnostics.find((x) => x.code === 'automation.unknown_environment');
  assert.ok(d);
  assert.equal(d.severity, 'error');
  assert.deepEqual([d.line, d.column], [2, 14]);
  assert.equal(d.message, "environment 'sandbx' is not defined in this repo (environments/sandbx.yaml); did you mean 'sandbox'?");
});

test('an environment unlike any in the repo is an error too: plan and apply would refuse it', () => {
  const d = compile(repo('gpu-runners')).diagnostics.find((x) => x.code === 'automation.unknown_environment');
  assert.equal(d?.message, "environment 'gpu-runners' is not defined in this repo (environments/gpu-runners.yaml); an automation runs only in an environment its own repo defines");
  assert.equal(compile(repo('sandbox')).diagnostics.some((x) => x.code === 'automation.unknown_environment'), false);
});

test('an agent timeout of zero or longer than a week is an error at the value', () => {
  const at = (timeout: string) =>
    compile([{ path: 'factory.yaml', text: 'name: shop\n' }, { path: 'environments/sandbox.yaml', text: `agent:\n  command: [node, agent.mjs]\n  timeout: ${timeout}\n` }])
      .diagnostics.filter((d) => d.severity === 'error').map((d) => [d.code, d.pointer, d.line, d.column, d.message]);
  assert.deepEqual(at('600h'), [['environment.invalid_value', '/agent/timeout', 3, 12, 'agent.timeout "600h" is longer than a week (168h), the longest allowed']]);
  assert.deepEqual(at('0m'), [['environment.invalid_value', '/agent/timeout', 3, 12, 'invalid duration "0m": must be greater than zero']]);
  assert.deepEqual(at('168h'), []);
  assert.deepEqual(at('1h30m'), []);
});

test('a repo url or ref git would read as an option, and an http(s) URL with a token, are errors at the value; an ssh user is fine', () => {
  const env = (repos: string) => compile([{ path: 'factory.yaml', text: 'name: shop\n' }, { path: 'environments/sandbox.yaml', text: `repos:\n${repos}agent:\n  command: [node, agent.mjs]\n` }]);
  const at = (repos: string) => env(repos).diagnostics.filter((d) => d.severity === 'error').map((d) => [d.code, d.pointer, d.line, d.column]);
  assert.deepEqual(at('  - url: https://x-access-token:ghp_SECRET@github.com/acme/app.git\n'), [['environment.invalid_value', '/repos/0/url', 2, 10]]);
  assert.deepEqual(at('  - url: https://ghp_SECRET@github.com/acme/app.git\n'), [['environment.invalid_value', '/repos/0/url', 2, 10]]);
  assert.deepEqual(at('  - url: "--upload-pack=touch /tmp/x"\n'), [['environment.invalid_value', '/repos/0/url', 2, 10]]);
  assert.deepEqual(at('  - url: https://github.com/acme/app.git\n    ref: "--orphan=x"\n'), [['environment.invalid_value', '/repos/0/ref', 3, 10]]);
  assert.deepEqual(at('  - url: ssh://git@github.com/acme/app.git\n  - url: git@github.com:acme/app.git\n    ref: main\n'), []);
  // A path the executor would refuse (outside the run's workspace) is refused here, not at every run.
  assert.deepEqual(at('  - url: https://github.com/acme/app.git\n    path: ../escape\n'), [['environment.invalid_value', '/repos/0/path', 3, 11]]);
  assert.deepEqual(at('  - url: https://github.com/acme/app.git\n    path: /etc\n'), [['environment.invalid_value', '/repos/0/path', 3, 11]]);
  assert.deepEqual(at('  - url: https://github.com/acme/app.git\n    path: a/../..\n'), [['environment.invalid_value', '/repos/0/path', 3, 11]]);
  assert.deepEqual(at('  - url: https://github.com/acme/app.git\n    path: src/app\n'), []);
  const token = env('  - url: https://ghp_SECRET@github.com/acme/app.git\n').diagnostics.find((d) => d.severity === 'error')!;
  assert.match(token.message, /must not carry a user name or token/);
  assert.ok(!token.message.includes('ghp_SECRET'), 'the message does not repeat the token');
});
