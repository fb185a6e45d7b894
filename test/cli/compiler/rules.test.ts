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
  assert.equal(d.severity, 'warning');
  assert.deepEqual([d.line, d.column], [2, 14]);
  assert.equal(d.message, "environment 'sandbx' is not defined in this repo (environments/sandbx.yaml); did you mean 'sandbox'?");
});

test('an environment unlike any in the repo is left to plan, which checks the runtime', () => {
  const d = compile(repo('gpu-runners')).diagnostics.find((x) => x.code === 'automation.unknown_environment');
  assert.equal(d?.message, "environment 'gpu-runners' is not defined in this repo (environments/gpu-runners.yaml); plan checks that it exists on the runtime");
  assert.equal(compile(repo('sandbox')).diagnostics.some((x) => x.code === 'automation.unknown_environment'), false);
});
