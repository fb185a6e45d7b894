import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { agentRun, isObject, type AgentRun } from './warp-exec.ts';
import { scheduleProblems } from '../../core/schedule.ts';
import type { ParsedFile } from './parse-file.ts';
import { closest } from './suggest.ts';

/**
 * The cross-file rules of Warp's v1alpha1 layout (docs/definitions.md#warps-layout): agents,
 * runners, skills, benchmarks and scorers, execution settings, trigger providers, events and
 * schedules. Values may be schema-invalid here, so every rule checks the shape it reads.
 */

export type Report = (f: ParsedFile, pointer: string, code: string, message: string, severity?: 'error' | 'warning', mode?: 'value' | 'key') => void;

/** Providers whose triggers this runtime serves: webhook deliveries and cron schedules. */
const SERVED_PROVIDERS = ['webhook', 'schedule'] as const;

/** Every provider Warp lists, with its events (docs/definitions.md#triggers). */
const PROVIDER_EVENTS: Readonly<Record<string, readonly string[]>> = {
  webhook: ['received'],
  schedule: ['cron_fired'],
  github: [
    'issue_created', 'issue_labeled', 'issue_assigned', 'issue_mentioned', 'pull_request_opened', 'pull_request_closed',
    'pull_request_merged', 'pull_request_labeled', 'pull_request_assigned', 'pull_request_mentioned', 'pull_request_ready',
    'pull_request_reopened', 'pull_request_synchronized', 'pull_request_review_requested', 'pull_request_review_submitted',
    'push', 'check_suite_completed', 'check_run_rerequested', 'check_suite_rerequested', 'workflow_run_completed',
  ],
  gitlab: ['merge_request', 'bot_mentioned'],
  linear: ['issue_created', 'issue_labeled', 'issue_assigned', 'issue_state_changed', 'comment_created', 'agent_session_created'],
  jira: ['issue_created', 'issue_labeled', 'status_changed', 'agent_session_created'],
  slack: ['app_mention', 'message_posted', 'message_dm', 'message_im', 'message_mpim', 'member_joined_channel', 'reaction_added'],
  factory: ['work_item_stage_changed'],
};
export const PROVIDERS = Object.keys(PROVIDER_EVENTS);

const isServedProvider = (p: unknown) => (SERVED_PROVIDERS as readonly unknown[]).includes(p);

const isForeman = (t: unknown) => t === 'FOREMAN' || t === 'MAIN';

/** What the rules need to know about the repo as a whole. */
export interface RepoFacts {
  factory?: ParsedFile;
  v1alpha1: boolean;
  agents: Map<string, ParsedFile>;
  runners: Set<string>;
  environments: Set<string>;
  /** The one foreman's name, when exactly one agent is a foreman. */
  foreman?: string;
  agentDefaults?: Record<string, any>;
}

export function repoFacts(files: ParsedFile[]): RepoFacts {
  const factory = files.find((f) => f.kind === 'factory');
  const fv = isObject(factory?.value) ? factory.value : {};
  const agents = new Map(files.filter((f) => f.kind === 'agent').map((f) => [f.name, f]));
  const foremen = [...agents.values()].filter((f) => isObject(f.value) && isForeman(f.value.agentType));
  return {
    factory,
    v1alpha1: fv.schemaVersion !== undefined,
    agents,
    runners: new Set(files.filter((f) => f.kind === 'runner').map((f) => f.name)),
    environments: new Set(files.filter((f) => f.kind === 'environment').map((f) => f.name)),
    foreman: foremen.length === 1 ? foremen[0].name : undefined,
    agentDefaults: isObject(fv.agentDefaults) ? fv.agentDefaults : undefined,
  };
}

/**
 * The environment an automation's runs execute in here: `environment`, else the first
 * environmentId of the automation, its agent and agentDefaults, when it names an environment of
 * this repo (another id is Warp's and means nothing here), else the environment made for its
 * agent when the harness is one this runtime runs.
 */
export function resolveEnvironment(
  v: Record<string, any>,
  facts: RepoFacts,
  automation?: string,
): { environment?: string; honoured?: 'automation' | 'agent' | 'defaults' | 'harness'; id?: unknown; run?: AgentRun } {
  if (typeof v.environment === 'string') return { environment: v.environment };
  const agentName = typeof v.agent === 'string' ? v.agent : facts.foreman;
  const agent = agentName ? facts.agents.get(agentName)?.value : undefined;
  const chain: ['automation' | 'agent' | 'defaults', unknown][] = [
    ['automation', v.environmentId],
    ['agent', isObject(agent) ? agent.environmentId : undefined],
    ['defaults', facts.agentDefaults?.environmentId],
  ];
  const first = chain.find(([, id]) => id !== undefined);
  if (!first || typeof first[1] !== 'string' || !facts.environments.has(first[1])) {
    // Else the agent's harness runs here when it is claude or codex (docs/definitions.md#warp-agents-run-here).
    const run = agentRun(v, facts, automation);
    return run.id ? { environment: run.id, honoured: 'harness', id: first?.[1], run } : { id: first?.[1], run };
  }
  return { environment: first[1], honoured: first[0], id: first[1] };
}

export function warpRules(files: ParsedFile[], report: Report): void {
  const facts = repoFacts(files);
  foremanRule(files, facts, report);
  for (const f of files) {
    if (!isObject(f.value)) continue;
    const v = f.value;
    if (f.kind === 'factory') {
      if (isObject(v.agentDefaults)) executionRules(f, '/agentDefaults', v.agentDefaults, facts, report, true);
      integrationRules(f, v, report);
    } else if (f.kind === 'agent') {
      executionRules(f, '', v, facts, report, false);
    } else if (f.kind === 'automation') {
      executionRules(f, '', v, facts, report, false);
      if (typeof v.agent === 'string' && RESOURCE_NAME_PATTERN.test(v.agent) && !facts.agents.has(v.agent)) {
        report(f, '/agent', 'automation.unknown_agent', unknownMessage('agent', v.agent, facts.agents.keys(), `agents/${v.agent}/agent.md`));
      }
      triggerRules(f, v, report);
    } else if (f.kind === 'runner') {
      runnerRules(f, v, report);
    } else if (f.kind === 'skill') {
      if (typeof v.name === 'string' && v.name !== f.name) {
        report(f, '/name', 'skill.name_mismatch', `the skill's name '${v.name}' differs from its folder '${f.name}'; agents find a skill by its folder, so make them equal`, 'warning');
      }
      if (f.scope !== undefined && !facts.agents.has(f.scope)) {
        report(f, '', 'skill.unknown_agent', `this skill belongs to agent '${f.scope}', but agents/${f.scope}/agent.md does not exist`);
      }
    } else if (f.kind === 'scorer') {
      scorerRules(f, v, facts, report);
    } else if (f.kind === 'benchmark') {
      if (typeof v.agent === 'string' && RESOURCE_NAME_PATTERN.test(v.agent) && !facts.agents.has(v.agent)) {
        report(f, '/agent', 'benchmark.unknown_agent', unknownMessage('agent', v.agent, facts.agents.keys(), `agents/${v.agent}/agent.md`));
      }
    }
  }
  benchmarkTaskRules(files, report);
  unservedProviders(files, report);
  inactiveAutomations(files, facts, report);
}

function unknownMessage(what: string, name: string, known: Iterable<string>, path: string): string {
  const near = closest(name, [...known].sort());
  return `${what} '${name}' is not defined in this repo (${path})${near ? `; did you mean '${near}'?` : ''}`;
}

/** Warp: every v1alpha1 definition declares at least one agent and exactly one foreman. */
function foremanRule(files: ParsedFile[], facts: RepoFacts, report: Report): void {
  const foremen = [...facts.agents.values()].filter((f) => isObject(f.value) && isForeman(f.value.agentType));
  if (foremen.length > 1) {
    for (const f of foremen) {
      report(f, '/agentType', 'repo.foreman_count', `${foremen.length} agents are the foreman (${foremen.map((g) => g.name).sort().join(', ')}); a factory has exactly one`);
    }
  } else if (foremen.length === 0 && facts.v1alpha1 && facts.factory) {
    const message = facts.agents.size === 0
      ? 'a v1alpha1 factory defines at least one agent and exactly one foreman: add agents/<name>/agent.md with agentType: FOREMAN'
      : `a v1alpha1 factory has exactly one foreman, the default agent of automations: set agentType: FOREMAN in one of ${[...facts.agents.keys()].sort().map((n) => `agents/${n}/agent.md`).join(', ')}`;
    report(facts.factory, '/schemaVersion', 'repo.foreman_count', message);
  }
}

/** model xor harness, the harness's auth, the runner it names (factory.yaml's agentDefaults, an agent, an automation). */
function executionRules(f: ParsedFile, base: string, v: Record<string, any>, facts: RepoFacts, report: Report, defaults: boolean): void {
  const kind = f.kind;
  if (v.model !== undefined && v.harness !== undefined) {
    report(f, `${base}/harness`, `${kind}.invalid_value`, 'declare model or harness, not both (model: X is short for harness: {type: oz, model: X})', 'error', 'key');
  } else if (defaults && v.model === undefined && v.harness === undefined) {
    report(f, `${base}/model`, 'factory.missing_key', 'agentDefaults declares exactly one of model or harness (for example model: auto)');
  }
  const h = v.harness;
  if (isObject(h)) {
    if (h.type === 'oz') {
      for (const key of ['auth', 'reasoningLevel']) {
        if (h[key] !== undefined) report(f, `${base}/harness/${key}`, `${kind}.invalid_value`, `the oz harness supplies its own credentials and takes no ${key}`, 'error', 'key');
      }
    }
    const auth = h.auth;
    if (isObject(auth)) {
      if (auth.source === 'managedSecret' && auth.secretName === undefined) {
        report(f, `${base}/harness/auth/secretName`, `${kind}.missing_key`, "auth source 'managedSecret' needs secretName, the secret that holds the harness credentials");
      }
      if (auth.source === 'workerEnvironment') {
        if (auth.secretName !== undefined) report(f, `${base}/harness/auth/secretName`, `${kind}.invalid_value`, "secretName is only for auth source 'managedSecret'", 'error', 'key');
        const host = v.workerHost ?? facts.agentDefaults?.workerHost;
        if (host === undefined || host === 'warp') {
          report(f, `${base}/harness/auth/source`, `${kind}.invalid_value`, "auth source 'workerEnvironment' reads a self-hosted worker's environment: set workerHost to the worker's id");
        }
      }
    }
  }
  if (typeof v.runner === 'string' && RESOURCE_NAME_PATTERN.test(v.runner) && !facts.runners.has(v.runner)) {
    report(f, `${base}/runner`, `${kind}.unknown_runner`, unknownMessage('runner', v.runner, facts.runners, `runners/${v.runner}.yaml`));
  }
}

function integrationRules(f: ParsedFile, v: Record<string, any>, report: Report): void {
  if (!Array.isArray(v.integrations)) return;
  const seen = new Map<string, number>();
  v.integrations.forEach((item: unknown, i: number) => {
    if (!isObject(item) || typeof item.type !== 'string') return;
    const first = seen.get(item.type);
    if (first !== undefined) report(f, `/integrations/${i}/type`, 'factory.invalid_value', `integration '${item.type}' is listed twice (items ${first} and ${i})`);
    else seen.set(item.type, i);
  });
  if (seen.has('linear') && seen.has('jira')) {
    report(f, `/integrations/${seen.get('jira')}/type`, 'factory.invalid_value', 'declare at most one issue tracker: linear and jira exclude each other');
  }
}

function triggerRules(f: ParsedFile, v: Record<string, any>, report: Report): void {
  if (!Array.isArray(v.triggers)) return;
  const schedules: { at: number; cron?: unknown; name?: unknown }[] = [];
  v.triggers.forEach((t: unknown, i: number) => {
    if (!isObject(t)) return;
    const base = `/triggers/${i}`;
    const events = typeof t.provider === 'string' ? PROVIDER_EVENTS[t.provider] : undefined;
    if (events && typeof t.event === 'string' && !events.includes(t.event)) {
      const near = closest(t.event, events);
      report(f, `${base}/event`, 'automation.unknown_event', `'${t.event}' is not a ${t.provider} event${near ? `; did you mean '${near}'?` : ''} (the ${t.provider} events: ${events.join(', ')})`);
    }
    if (t.provider === 'schedule') {
      if (t.filter !== undefined) report(f, `${base}/filter`, 'automation.invalid_value', 'a schedule trigger takes no filter; its schedule says when it fires', 'error', 'key');
      if (t.schedule === undefined) report(f, `${base}/schedule`, 'automation.missing_key', 'a schedule trigger needs schedule: {cron: "<five fields or a descriptor>"}');
      else if (isObject(t.schedule)) schedules.push({ at: i, cron: t.schedule.cron, name: t.schedule.name });
    } else if (t.schedule !== undefined && typeof t.provider === 'string' && events) {
      report(f, `${base}/schedule`, 'automation.invalid_value', `schedule is only for provider schedule; this trigger's provider is '${t.provider}'`, 'error', 'key');
    }
  });
  for (const p of scheduleProblems(schedules)) {
    const base = `/triggers/${p.at}/schedule`;
    if ('error' in p) report(f, `${base}/cron`, 'automation.invalid_schedule', p.error);
    else {
      report(f, `${base}${p.name ? '/name' : ''}`, 'automation.invalid_schedule', p.name
        ? `schedule name '${p.name}' is already used by trigger ${p.first + 1}; names tell an automation's schedules apart`
        : `trigger ${p.first + 1} is already an unnamed schedule; give each schedule of an automation a name`);
    }
  }
}

function runnerRules(f: ParsedFile, v: Record<string, any>, report: Report): void {
  const p = v.platform;
  if (!isObject(p)) return;
  const os = p.os ?? 'linux';
  if (os === 'linux') {
    if (p.linux === undefined) report(f, '/platform/linux', 'runner.missing_key', 'a Linux runner needs linux: {dockerImage: <image>}, the container image the sandbox boots');
    if (p.mac !== undefined) report(f, '/platform/mac', 'runner.invalid_value', "mac is only for os 'macos'", 'error', 'key');
  } else if (os === 'macos') {
    if (p.arch !== undefined && p.arch !== 'aarch64') report(f, '/platform/arch', 'runner.invalid_value', "macOS runners are aarch64 only");
    if (p.linux !== undefined) report(f, '/platform/linux', 'runner.invalid_value', "linux is only for os 'linux'", 'error', 'key');
  }
}

function scorerRules(f: ParsedFile, v: Record<string, any>, facts: RepoFacts, report: Report): void {
  if (Array.isArray(v.agents)) {
    v.agents.forEach((a: unknown, i: number) => {
      if (typeof a === 'string' && RESOURCE_NAME_PATTERN.test(a) && !facts.agents.has(a)) {
        report(f, `/agents/${i}`, 'scorer.unknown_agent', unknownMessage('agent', a, facts.agents.keys(), `agents/${a}/agent.md`));
      }
    });
  }
  if (Array.isArray(v.labels) && typeof v.passingScore === 'number') {
    const scores = v.labels.filter(isObject).map((l) => l.score).filter((s): s is number => typeof s === 'number');
    if (scores.length === v.labels.length && (!scores.some((s) => s >= v.passingScore) || !scores.some((s) => s < v.passingScore))) {
      report(f, '/passingScore', 'scorer.invalid_value', `at least one label must score at or above passingScore ${v.passingScore} and one below it`);
    }
  }
}

/** A suite lists each task file once, and each listed slug has its file. */
function benchmarkTaskRules(files: ParsedFile[], report: Report): void {
  const suites = new Map(files.filter((f) => f.kind === 'benchmark').map((f) => [f.name, f]));
  const tasks = new Map<string, Map<string, ParsedFile>>();
  for (const f of files) {
    if (f.kind !== 'benchmark_task' || f.scope === undefined) continue;
    if (!tasks.has(f.scope)) tasks.set(f.scope, new Map());
    tasks.get(f.scope)!.set(f.name, f);
  }
  for (const [slug, suite] of suites) {
    const own = tasks.get(slug) ?? new Map<string, ParsedFile>();
    const listed = isObject(suite.value) && Array.isArray(suite.value.tasks) ? (suite.value.tasks as unknown[]) : [];
    listed.forEach((t, i) => {
      if (typeof t === 'string' && RESOURCE_NAME_PATTERN.test(t) && !own.has(t)) {
        report(suite, `/tasks/${i}`, 'benchmark.unknown_task', unknownMessage('task', t, own.keys(), `benchmarks/${slug}/tasks/${t}.yaml`));
      }
    });
    for (const [name, f] of own) {
      if (!listed.includes(name)) report(f, '', 'benchmark.unlisted_task', `task '${name}' is not in the tasks of benchmarks/${slug}/suite.yaml; list every task file once`);
    }
  }
  for (const [slug, own] of tasks) {
    if (suites.has(slug)) continue;
    for (const f of own.values()) report(f, '', 'benchmark.unlisted_task', `benchmarks/${slug}/ has no suite.yaml to list this task`);
  }
}

/** Triggers of providers this runtime does not serve: one warning per provider, at its first trigger. */
function unservedProviders(files: ParsedFile[], report: Report): void {
  const byProvider = new Map<string, { f: ParsedFile; pointer: string; count: number }>();
  for (const f of files) {
    if (f.kind !== 'automation' || !isObject(f.value) || !Array.isArray(f.value.triggers)) continue;
    f.value.triggers.forEach((t: unknown, i: number) => {
      if (!isObject(t) || typeof t.provider !== 'string' || !PROVIDER_EVENTS[t.provider] || isServedProvider(t.provider)) return;
      const seen = byProvider.get(t.provider);
      if (seen) seen.count += 1;
      else byProvider.set(t.provider, { f, pointer: `/triggers/${i}/provider`, count: 1 });
    });
  }
  for (const [provider, { f, pointer, count }] of byProvider) {
    const more = count > 1 ? ` (${count} triggers in this repo)` : '';
    report(f, pointer, 'automation.provider_not_served', `${provider} triggers are validated; not served by this runtime, which serves webhook and schedule triggers${more}`, 'warning');
  }
}

/** An automation with a trigger served here but no environment to run in: recorded, never started. */
function inactiveAutomations(files: ParsedFile[], facts: RepoFacts, report: Report): void {
  for (const f of files) {
    if (f.kind !== 'automation' || !isObject(f.value)) continue;
    const v = f.value;
    const served = Array.isArray(v.triggers) && v.triggers.some((t: unknown) => isObject(t) && isServedProvider(t.provider));
    if (!served) continue;
    const { environment, id, run } = resolveEnvironment(v, facts, f.name);
    if (environment !== undefined) continue;
    const env = typeof id === 'string' ? `environmentId '${id}' names no environment of this repo` : 'it names no environment';
    const harness = run?.harness ? ` and its agent's harness '${run.harness.type}' does not run here (claude and codex do)` : '';
    report(f, '', 'automation.not_served', `validated; not served by this runtime: ${env}${harness}, so its runs have nowhere to execute here; add environment: <name> (environments/<name>.yaml)`, 'warning');
  }
}
