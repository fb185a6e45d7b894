import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { compile, compileDir, type SourceFile } from '../../../cli/compiler/index.ts';
import { validateSnapshot } from '../../../core/schemas.ts';

/** Warp agents compiled into environments (docs/definitions.md#warp-agents-run-here). */

const FACTORY = 'schemaVersion: v1alpha1\nname: payments\nrepositories:\n  - owner: acme\n    name: payments-service\nagentDefaults:\n  model: auto\n';
const NIGHTLY = '---\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule: {cron: "@daily"}\n---\nSweep.\n';
const files = (f: Record<string, string>): SourceFile[] => Object.entries(f).map(([path, text]) => ({ path, text }));

test('warp-e2e: the agent\'s environment and an automation\'s own, in the snapshot and its schema', async () => {
  const { snapshot, diagnostics } = await compileDir(resolve(import.meta.dirname, '../../fixtures/warp-e2e'));
  assert.ok(snapshot, JSON.stringify(diagnostics));
  assert.deepEqual(diagnostics.filter((d) => d.severity === 'error'), []);
  assert.equal(validateSnapshot(JSON.parse(JSON.stringify(snapshot))).ok, true);
  assert.deepEqual(snapshot.automations.map((a) => [a.name, a.environment]), [
    ['closed-with-codex', 'automation:warp-e2e/closed-with-codex'],
    ['review-pull-request', 'agent:warp-e2e/reviewer'],
  ]);
  const [claude, codex] = snapshot.environments;
  assert.equal(claude.name, 'agent:warp-e2e/reviewer');
  assert.deepEqual(claude.agent, {
    command: ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'],
    format: 'claude-stream-json',
    timeout: '30m',
  });
  assert.deepEqual(claude.setup, ['echo "setup ran in $PWD" > setup-proof.txt', 'ls app']);
  assert.deepEqual(claude.env, { ANTHROPIC_API_KEY: { secret: 'anthropic-key' } });
  assert.equal(claude.network, 'open');
  assert.deepEqual(claude.repos, []);
  assert.equal(claude.source.file, 'agents/reviewer/agent.md');
  assert.deepEqual(claude.warp && { ...claude.warp, instructions: undefined }, { agent: 'reviewer', harness: 'claude', runner: 'build', repositories: [{ owner: 'acme', name: 'app' }], instructions: undefined });
  assert.equal(
    claude.warp!.instructions,
    'You are the reviewer. Read the diff, then write one short review.\n\n# Skills\n\n## house-style\n\nThe team\'s writing style.\n\nShort sentences. No jargon.\n\n## review-checklist\n\nWhat every review checks.\n\nCheck tests, naming and error messages.',
  );
  // The automation's own harness replaces the agent's whole: codex, no model, no key.
  assert.equal(codex.name, 'automation:warp-e2e/closed-with-codex');
  assert.deepEqual(codex.agent.command, ['codex', 'exec', '--json', '--dangerously-bypass-approvals-and-sandbox', '-']);
  assert.equal(codex.agent.format, 'codex-json');
  assert.deepEqual(codex.env, {});
  assert.equal(codex.warp?.automation, 'closed-with-codex');
  assert.equal(codex.source.file, 'automations/closed-with-codex.md');
  // What runs is no longer listed as recorded only; the foreman's oz harness and the runner's platform are.
  assert.deepEqual(snapshot.inactive?.map((i) => `${i.file}#${i.pointer}`), ['agents/foreman/agent.md#', 'factory.yaml#/agentDefaults/model', 'runners/build.yaml#/platform']);
});

test('an oz harness does not run here: the automation is not served and the warning says why; an environment wins over a claude harness', () => {
  const oz = compile(files({ 'factory.yaml': FACTORY, 'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\nRoute.\n', 'automations/nightly/automation.md': NIGHTLY }));
  const warning = oz.diagnostics.find((d) => d.code === 'automation.not_served');
  assert.match(warning!.message, /it names no environment and its agent's harness 'oz' does not run here \(claude and codex do\)/);
  assert.deepEqual(oz.snapshot?.inactive_automations?.map((a) => a.name), ['nightly']);

  const claude = '---\nagentType: FOREMAN\nharness:\n  type: claude\n---\nRoute.\n';
  const runs = compile(files({ 'factory.yaml': FACTORY, 'agents/foreman/agent.md': claude, 'automations/nightly/automation.md': NIGHTLY }));
  assert.deepEqual(runs.snapshot?.automations.map((a) => a.environment), ['agent:payments/foreman']);
  assert.deepEqual(runs.snapshot?.environments[0].agent.command, ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions']);
  assert.deepEqual(runs.snapshot?.environments[0].env, {}, 'no auth: no key');

  const own = compile(files({
    'factory.yaml': FACTORY,
    'agents/foreman/agent.md': claude,
    'environments/sandbox.yaml': 'agent:\n  command: ["true"]\n',
    'automations/nightly/automation.md': NIGHTLY.replace('---\ntriggers', '---\nenvironment: sandbox\ntriggers'),
  }));
  assert.deepEqual(own.snapshot?.automations.map((a) => a.environment), ['sandbox']);
  assert.deepEqual(own.snapshot?.environments.map((e) => e.name), ['sandbox'], 'no agent environment when no automation runs it');
});
