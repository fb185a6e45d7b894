import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { compile, compileDir, DIAGNOSTIC_CODES, locate, type Diagnostic, type SourceFile } from '../../../cli/compiler/index.ts';
import { validateSnapshot } from '../../../core/schemas.ts';
import { runCli } from '../../../cli/main.ts';
import { bufferIO } from '../helpers.ts';

const fixture = (name: string) => resolve(import.meta.dirname, '../../fixtures', name);
const brief = (d: Diagnostic) => `${d.file}:${d.line}:${d.column} ${d.severity} ${d.code}`;
const NOT_SERVED = new Set(['automation.provider_not_served', 'automation.not_served']);

const WARP_FACTORY = 'schemaVersion: v1alpha1\nname: payments\nrepositories:\n  - owner: acme\n    name: payments-service\nagentDefaults:\n  model: auto\n';
const FOREMAN = { path: 'agents/foreman/agent.md', text: '---\nagentType: FOREMAN\n---\nRoute the work.\n' };

function compileFiles(files: Record<string, string>) {
  const list: SourceFile[] = Object.entries(files).map(([path, text]) => ({ path, text }));
  return compile(list);
}

/** The one diagnostic of `code`, asserting there is exactly one. */
function only(diags: Diagnostic[], code: string): Diagnostic {
  const found = diags.filter((d) => d.code === code);
  assert.equal(found.length, 1, `${code}: ${JSON.stringify(diags.map(brief))}`);
  return found[0];
}

for (const name of ['warp-quickstart', 'warp-full']) {
  test(`${name}: Warp's layout validates with only "not served" warnings, and the snapshot is valid`, async () => {
    const { diagnostics, snapshot } = await compileDir(fixture(name));
    assert.deepEqual(diagnostics.filter((d) => !NOT_SERVED.has(d.code)).map(brief), []);
    assert.ok(diagnostics.every((d) => d.severity === 'warning'));
    assert.ok(snapshot);
    const checked = validateSnapshot(snapshot);
    assert.ok(checked.ok, JSON.stringify(!checked.ok && checked.errors));
  });

  test(`${name}: \`factory validate\` exits 0`, async () => {
    const io = bufferIO();
    assert.equal(await runCli(['validate', `test/fixtures/${name}`], io), 0);
    assert.match(io.out, /0 errors, \d+ warnings?\./);
    for (const line of io.out.split('\n').filter((l) => l.includes(': warning '))) assert.match(line, /not served by this runtime/);
  });
}

test('warp-full: each provider not served is reported once, at its first trigger, naming it', async () => {
  const { diagnostics } = await compileDir(fixture('warp-full'));
  assert.deepEqual(diagnostics.map(brief), [
    'automations/labeled-issue/automation.md:5:15 warning automation.provider_not_served',
    'automations/labeled-issue/automation.md:10:15 warning automation.provider_not_served',
    'automations/slack-mention/automation.md:3:15 warning automation.provider_not_served',
  ]);
  assert.match(diagnostics[0].message, /^github triggers are validated; not served by this runtime/);
  assert.match(diagnostics[2].message, /^slack triggers/);
});

test('warp-full: the snapshot holds agents, skills, runners, schedules and what is only recorded', async () => {
  const { snapshot } = await compileDir(fixture('warp-full'));
  assert.ok(snapshot);
  // environmentId: sandbox in agentDefaults names environments/sandbox.yaml, so automations run there.
  assert.deepEqual(snapshot.automations.map((a) => [a.name, a.environment, a.agent]), [
    ['ci-failed', 'sandbox', 'implementer'],
    ['labeled-issue', 'sandbox', 'foreman'],
    ['slack-mention', 'sandbox', 'foreman'],
    ['weekday-triage', 'sandbox', 'foreman'],
  ]);
  const triage = snapshot.automations.find((a) => a.name === 'weekday-triage')!;
  assert.deepEqual(triage.schedules, [
    { name: 'weekday-mornings', cron: '0 9 * * 1-5' },
    { name: 'hourly-sweep', cron: '@every 1h' },
  ]);
  assert.deepEqual(triage.triggers, []);
  const labeled = snapshot.automations.find((a) => a.name === 'labeled-issue')!;
  assert.deepEqual(labeled.inactive_triggers?.map((t) => `${t.provider}/${t.event}`), ['github/issue_labeled', 'linear/issue_labeled']);
  assert.deepEqual(snapshot.automations.find((a) => a.name === 'ci-failed')!.execution, { runner: 'linux-build' });

  assert.deepEqual(snapshot.agents?.map((a) => [a.name, a.agentType]), [['foreman', 'FOREMAN'], ['implementer', 'IMPLEMENT'], ['reviewer', 'REVIEW']]);
  // claude-code is Warp's alias of claude; model: X is {type: oz, model: X}.
  assert.equal(snapshot.agents?.find((a) => a.name === 'implementer')!.execution?.harness?.type, 'claude');
  assert.deepEqual(snapshot.factory.agentDefaults?.harness, { type: 'oz', model: 'auto' });
  assert.match(snapshot.agents![0].instructions, /^Own each work item/);
  assert.deepEqual(snapshot.skills?.map((s) => [s.agent ?? null, s.name]), [[null, 'repository-conventions'], ['foreman', 'incident-triage']]);
  assert.deepEqual(snapshot.runners?.map((r) => [r.name, r.platform]), [
    ['linux-build', { os: 'linux', arch: 'x86_64', linux: { dockerImage: 'ubuntu:22.04' } }],
    ['mac-build', { os: 'macos', arch: 'aarch64', mac: { version: '15' } }],
  ]);
  // standard_webhooks is the same scheme as standard-webhooks; enabled is kept as written.
  const billing = snapshot.webhooks.find((w) => w.name === 'billing-events')!;
  assert.equal(billing.signatureScheme, 'standard-webhooks');
  assert.equal(billing.enabled, false);

  const inactive = new Set(snapshot.inactive?.map((i) => `${i.file}#${i.pointer}`));
  for (const key of ['alias', 'credentialStrategy', 'repositories', 'secrets', 'mcpServers', 'cloudProviders', 'integrations', 'agentDefaults/model', 'agentDefaults/runner', 'agentDefaults/workerHost']) {
    assert.ok(inactive.has(`factory.yaml#/${key}`), key);
  }
  // Honoured here, so not inactive.
  assert.ok(!inactive.has('factory.yaml#/agentDefaults/environmentId'));
  for (const file of ['benchmarks/pull-request-review/suite.yaml', 'scorers/tests-run/scorer.md', 'scorers/review-depth/scorer.md', 'runners/linux-build.yaml', 'skills/repository-conventions/SKILL.md', 'agents/reviewer/agent.md']) {
    assert.ok(inactive.has(`${file}#`), file);
  }
  assert.ok(inactive.has('automations/labeled-issue/automation.md#/triggers/0'));
  assert.equal(snapshot.inactive_automations, undefined);
});

test('warp-quickstart: an automation with no environment here is recorded as inactive, never dropped', async () => {
  const { snapshot } = await compileDir(fixture('warp-quickstart'));
  assert.ok(snapshot);
  assert.deepEqual(snapshot.automations, []);
  assert.deepEqual(snapshot.inactive_automations?.map((a) => [a.name, a.agent, a.inactive_triggers?.[0].event]), [['merged-pull-request', 'foreman', 'pull_request_merged']]);
});

test('a repo in this runtime\'s own format compiles exactly as before: no Warp keys in the snapshot', async () => {
  const { snapshot } = await compileDir(resolve(import.meta.dirname, '../../../examples/factory'));
  assert.ok(snapshot);
  for (const key of ['agents', 'skills', 'runners', 'inactive', 'inactive_automations']) assert.equal(key in snapshot, false, key);
  assert.deepEqual(Object.keys(snapshot.factory).sort(), ['description', 'name', 'source']);
});

test('an automation served here without an environment is a "not served" warning naming the missing environment', () => {
  const { diagnostics, snapshot } = compileFiles({
    'factory.yaml': WARP_FACTORY.replace('  model: auto\n', '  model: auto\n  environmentId: WARP_ENV_ID\n'),
    [FOREMAN.path]: FOREMAN.text,
    'automations/nightly/automation.md': '---\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule: {cron: "@daily"}\n---\nSweep.\n',
  });
  const d = only(diagnostics, 'automation.not_served');
  assert.equal(brief(d), 'automations/nightly/automation.md:2:1 warning automation.not_served');
  assert.match(d.message, /environmentId 'WARP_ENV_ID' names no environment of this repo/);
  assert.deepEqual(snapshot?.inactive_automations?.map((a) => a.schedules), [[{ cron: '@daily' }]]);
  assert.ok(snapshot?.inactive?.some((i) => i.file === 'factory.yaml' && i.pointer === '/agentDefaults/environmentId'));
});

test('new files get file:line:col diagnostics with "did you mean"', () => {
  const { diagnostics } = compileFiles({
    'factory.yaml': WARP_FACTORY,
    'agents/foreman/agent.md': '---\ndescription: Routes work\nagentTyp: FOREMAN\n---\nRoute.\n',
    'agents/reviewer/agent.md': '---\nagentType: REVIEW\nmodel: auto\nharness:\n  type: claud\nrunner: linux-bild\n---\nReview.\n',
    'runners/linux-build.yaml': 'setupCommand:\n  - make\nplatform:\n  os: linux\n  linux: {dockerImage: ubuntu:22.04}\n',
    'runners/mac.yaml': 'platform:\n  os: macos\n  arch: x86_64\n',
    'skills/conventions/SKILL.md': '---\nname: conventions\n---\nUse tabs.\n',
    'automations/ci/automation.md': '---\nagnet: reviewer\ntriggers:\n  - provider: github\n    event: pull_request_open\n---\nReview it.\n',
    'automations/nightly/automation.md': '---\nagent: reveiwer\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule:\n      cron: "0 9 * *"\n---\nSweep.\n',
  });
  const lines = diagnostics.map((d) => `${brief(d)}: ${d.message}`);
  const has = (prefix: string, message: RegExp) => assert.ok(lines.some((l) => l.startsWith(prefix) && message.test(l)), `${prefix} ${message}\n${lines.join('\n')}`);
  has('agents/foreman/agent.md:3:1 error agent.unknown_key', /unknown key 'agentTyp' in the front matter; did you mean 'agentType'\?/);
  has('agents/reviewer/agent.md:4:1 error agent.invalid_value', /declare model or harness, not both/);
  has('agents/reviewer/agent.md:5:9 error agent.invalid_value', /\/harness\/type must be one of 'oz', 'claude', 'claude-code', 'codex', 'gemini', got 'claud'/);
  has('agents/reviewer/agent.md:6:9 error agent.unknown_runner', /runner 'linux-bild' is not defined in this repo \(runners\/linux-bild.yaml\); did you mean 'linux-build'\?/);
  has('runners/linux-build.yaml:1:1 error runner.unknown_key', /did you mean 'setupCommands'\?/);
  has('runners/mac.yaml:3:9 error runner.invalid_value', /macOS runners are aarch64 only/);
  has('skills/conventions/SKILL.md:2:1 error skill.missing_key', /missing required key 'description'/);
  has('automations/ci/automation.md:2:1 error automation.unknown_key', /did you mean 'agent'\?/);
  has('automations/ci/automation.md:5:12 error automation.unknown_event', /'pull_request_open' is not a github event; did you mean 'pull_request_opened'\?/);
  has('automations/nightly/automation.md:2:8 error automation.unknown_agent', /agent 'reveiwer' is not defined in this repo \(agents\/reveiwer\/agent.md\); did you mean 'reviewer'\?/);
  has('automations/nightly/automation.md:7:13 error automation.invalid_schedule', /'0 9 \* \*' has 4 fields; a cron schedule has five/);
  for (const d of diagnostics) assert.ok((DIAGNOSTIC_CODES as readonly string[]).includes(d.code), d.code);
});

test('v1alpha1 rules: required keys, one foreman, harness auth, integrations, scorers and benchmarks', () => {
  const { diagnostics } = compileFiles({
    'factory.yaml': 'schemaVersion: v1alpha1\nname: payments\nintegrations:\n  - type: linear\n  - type: jira\n',
    'agents/a/agent.md': '---\nagentType: FOREMAN\nharness:\n  type: oz\n  reasoningLevel: high\n---\n',
    'agents/b/agent.md': '---\nagentType: MAIN\nharness:\n  type: codex\n  auth: {source: managedSecret}\n---\n',
    'agents/c/agent.md': '---\nharness:\n  type: claude\n  auth: {source: workerEnvironment}\n---\n',
    'agents/ghost/skills/s/SKILL.md': '---\nname: other\ndescription: x\n---\n',
    'scorers/s/scorer.md': '---\nname: s\nagents: [a, d]\nlabels: [{value: ok, score: 1}, {value: good, score: 0.9}]\npassingScore: 0.5\nmodel: m\n---\nRubric.\n',
    'benchmarks/b/suite.yaml': 'name: B\nagent: a\ntasks: [one, two]\n',
    'benchmarks/b/tasks/one.yaml': 'title: One\nprompt: p\nsuccessCriteria: s\nstartingRepoRefs: [github.com:acme/x@main]\n',
    'benchmarks/b/tasks/three.yaml': 'title: Three\nprompt: p\nsuccessCriteria: s\n',
  });
  assert.deepEqual(diagnostics.map(brief), [
    'agents/a/agent.md:2:12 error repo.foreman_count',
    'agents/a/agent.md:5:3 error agent.invalid_value',
    'agents/b/agent.md:2:12 error repo.foreman_count',
    'agents/b/agent.md:5:9 error agent.missing_key',
    'agents/c/agent.md:4:18 error agent.invalid_value',
    'agents/ghost/skills/s/SKILL.md:2:1 error skill.unknown_agent',
    'agents/ghost/skills/s/SKILL.md:2:7 warning skill.name_mismatch',
    'benchmarks/b/suite.yaml:3:14 error benchmark.unknown_task',
    'benchmarks/b/tasks/one.yaml:4:20 error benchmark_task.invalid_value',
    'benchmarks/b/tasks/three.yaml:1:1 error benchmark.unlisted_task',
    'factory.yaml:1:1 error factory.missing_key',
    'factory.yaml:1:1 error factory.missing_key',
    'factory.yaml:5:11 error factory.invalid_value',
    'scorers/s/scorer.md:3:13 error scorer.unknown_agent',
    'scorers/s/scorer.md:5:15 error scorer.invalid_value',
  ]);
  assert.match(only(diagnostics, 'benchmark.unknown_task').message, /task 'two' is not defined in this repo/);
  assert.match(only(diagnostics, 'agent.missing_key').message, /needs secretName/);
  assert.match(diagnostics.find((d) => d.file === 'agents/a/agent.md' && d.code === 'agent.invalid_value')!.message, /oz harness .* takes no reasoningLevel/);
  assert.match(only(diagnostics, 'factory.invalid_value').message, /linear and jira exclude each other/);
  assert.match(only(diagnostics, 'scorer.invalid_value').message, /one below it/);
  assert.deepEqual(diagnostics.filter((d) => d.code === 'factory.missing_key').map((d) => d.pointer), ['/agentDefaults', '/repositories']);
});

test('a scorer without name is named by its folder, and a name may not repeat another scorer folder', () => {
  const scorer = (name: string) => `---\n${name}agents: [foreman]\nlabels: [{value: yes, score: 1}, {value: no, score: 0}]\npassingScore: 1\nmodel: m\n---\nJudge.\n`;
  const base = { 'factory.yaml': WARP_FACTORY, [FOREMAN.path]: FOREMAN.text };
  assert.deepEqual(compileFiles({ ...base, 'scorers/speed/scorer.md': scorer(''), 'scorers/depth/scorer.md': scorer('name: depth-v2\n') }).diagnostics, []);
  const { diagnostics } = compileFiles({ ...base, 'scorers/speed/scorer.md': scorer(''), 'scorers/other/scorer.md': scorer('name: speed\n') });
  assert.deepEqual(diagnostics.map(brief), ['scorers/other/scorer.md:2:1 error repo.duplicate_name', 'scorers/speed/scorer.md:2:1 error repo.duplicate_name']);
  assert.match(diagnostics[0].message, /^scorer 'speed' is defined more than once \(scorers\/other\/scorer.md and scorers\/speed\/scorer.md\)/);
});

test('a v1alpha1 repo without a foreman is told where to declare one', () => {
  const { diagnostics } = compileFiles({ 'factory.yaml': WARP_FACTORY, 'agents/helper/agent.md': 'Help.\n' });
  const d = only(diagnostics, 'repo.foreman_count');
  assert.equal(brief(d), 'factory.yaml:1:16 error repo.foreman_count');
  assert.match(d.message, /agents\/helper\/agent.md/);
});

test('schedules: descriptors and @every are accepted; what never fires, or fires too often, is not', () => {
  const sched = (cron: string) => `  - provider: schedule\n    event: cron_fired\n    schedule:\n      cron: "${cron}"\n`;
  const good = ['@daily', '@hourly', '@weekly', '@every 1h', '@every 1h30m', '*/15 * * * *', '0 9 * * MON-FRI'];
  const bad: [string, RegExp][] = [
    ['@every 30s', /shorter than a minute/],
    ['@fortnightly', /not a descriptor/],
    ['0 0 31 2 *', /never fires/],
    ['61 * * * *', /not a valid cron schedule/],
    ['0 0 * * * *', /has 6 fields/],
  ];
  for (const cron of good) {
    const { diagnostics } = compileFiles({ 'factory.yaml': 'name: t\n', 'environments/e.yaml': 'agent: {command: [a]}\n', 'automations/a.md': `---\nenvironment: e\ntriggers:\n${sched(cron)}---\nGo.\n` });
    assert.deepEqual(diagnostics.map(brief), [], cron);
  }
  for (const [cron, message] of bad) {
    const { diagnostics } = compileFiles({ 'factory.yaml': 'name: t\n', 'environments/e.yaml': 'agent: {command: [a]}\n', 'automations/a.md': `---\nenvironment: e\ntriggers:\n${sched(cron)}---\nGo.\n` });
    const d = only(diagnostics, 'automation.invalid_schedule');
    assert.equal(`${d.line}:${d.column}`, '7:13', cron);
    assert.match(d.message, message, cron);
  }
});

test('schedule names used twice name the earlier trigger counting from 1, as plan does', () => {
  const named = (name: string) => `  - provider: schedule\n    event: cron_fired\n    schedule: {name: ${name}, cron: "@daily"}\n`;
  const unnamed = '  - provider: schedule\n    event: cron_fired\n    schedule: {cron: "@hourly"}\n';
  const base = { 'factory.yaml': 'name: t\n', 'environments/e.yaml': 'agent: {command: [a]}\n' };
  const twice = compileFiles({ ...base, 'automations/a.md': `---\nenvironment: e\ntriggers:\n${named('a')}${named('b')}${named('a')}---\nGo.\n` });
  assert.equal(only(twice.diagnostics, 'automation.invalid_schedule').message, "schedule name 'a' is already used by trigger 1; names tell an automation's schedules apart");
  const bare = compileFiles({ ...base, 'automations/a.md': `---\nenvironment: e\ntriggers:\n${named('a')}${unnamed}${unnamed}---\nGo.\n` });
  assert.equal(only(bare.diagnostics, 'automation.invalid_schedule').message, 'trigger 2 is already an unnamed schedule; give each schedule of an automation a name');
});

test('an empty cron or an empty schedule name is one diagnostic, the schema\'s, at the value', () => {
  const base = { 'factory.yaml': 'name: t\n', 'environments/e.yaml': 'agent: {command: [a]}\n' };
  const trigger = (schedule: string) => `  - provider: schedule\n    event: cron_fired\n    schedule: ${schedule}\n`;
  const empty = compileFiles({ ...base, 'automations/a.md': `---\nenvironment: e\ntriggers:\n${trigger('{cron: ""}')}---\nGo.\n` });
  assert.deepEqual(empty.diagnostics.map((d) => `${brief(d)}: ${d.message}`), ['automations/a.md:6:22 error automation.invalid_value: /triggers/0/schedule/cron must not be empty']);
  const unnamed = compileFiles({ ...base, 'automations/a.md': `---\nenvironment: e\ntriggers:\n${trigger('{cron: "@daily"}')}${trigger('{name: "", cron: "@hourly"}')}---\nGo.\n` });
  assert.deepEqual(unnamed.diagnostics.map((d) => d.code), ['automation.invalid_value']);
  assert.match(unnamed.diagnostics[0].message, /\/triggers\/1\/schedule\/name '' is not a valid name/);
});

test('locate() finds pointers in agents, skills and scorers front matter', () => {
  const files: SourceFile[] = [{ path: 'agents/x/agent.md', text: '---\ndescription: d\nrunner: r\n---\nBody\n' }];
  assert.deepEqual(locate(files, 'agents/x/agent.md', '/runner'), { line: 3, column: 9 });
  assert.deepEqual(locate(files, 'agents/x/agent.md', '/prompt'), { line: 5, column: 1 });
});
