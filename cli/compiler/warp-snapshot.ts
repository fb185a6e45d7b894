import type {
  AgentDef,
  ExecutionSettings,
  FactoryDef,
  HarnessDef,
  InactiveItem,
  InactiveTrigger,
  RunnerDef,
  ScheduleDef,
  SkillDef,
  WebhookTrigger,
} from '../../core/snapshot.ts';
import { isRunnableHarness } from '../../core/harness.ts';
import { promptOf } from './front-matter.ts';
import { harnessOf, type AgentRun } from './warp-exec.ts';
import type { ParsedFile } from './parse-file.ts';
import type { RepoFacts } from './warp-rules.ts';

/**
 * The snapshot parts of Warp's v1alpha1 layout (docs/definitions.md#the-snapshot), built from
 * files that compiled without errors, so every value matches its schema here.
 */

type Obj = Record<string, any>;


/** The execution keys of agentDefaults, an agent or an automation; undefined when none is set. */
export function execution(v: Obj): ExecutionSettings | undefined {
  const harness = harnessOf(v);
  if (harness === undefined && v.runner === undefined && v.environmentId === undefined && v.secrets === undefined && v.mcpServers === undefined && v.workerHost === undefined) {
    return undefined;
  }
  const out: ExecutionSettings = {
    harness,
    runner: v.runner,
    environmentId: v.environmentId,
    secrets: v.secrets,
    mcpServers: v.mcpServers,
    workerHost: v.workerHost,
  };
  return Object.values(out).some((x) => x !== undefined) ? out : undefined;
}

export function factoryDef(f: ParsedFile, v: Obj): FactoryDef {
  return {
    name: v.name,
    description: v.description,
    schemaVersion: v.schemaVersion,
    alias: v.alias,
    credentialStrategy: v.credentialStrategy,
    repositories: v.repositories,
    secrets: v.secrets,
    mcpServers: v.mcpServers,
    cloudProviders: v.cloudProviders,
    integrations: v.integrations,
    agentDefaults: v.agentDefaults === undefined ? undefined : (execution(v.agentDefaults) ?? {}),
    source: { file: f.path },
  };
}

/** An automation's triggers split by what this runtime does with them. */
export function triggersOf(triggers: Obj[]): { triggers: WebhookTrigger[]; schedules?: ScheduleDef[]; inactive_triggers?: InactiveTrigger[] } {
  const webhook: WebhookTrigger[] = [];
  const schedules: ScheduleDef[] = [];
  const other: InactiveTrigger[] = [];
  for (const t of triggers) {
    if (t.provider === 'webhook') {
      webhook.push({ provider: 'webhook', event: 'received', filter: { webhook_ids: [t.filter.webhook_ids[0]], payload: t.filter.payload } });
    } else if (t.provider === 'schedule') {
      schedules.push({ name: t.schedule.name, cron: t.schedule.cron.trim() });
    } else other.push({ provider: t.provider, event: t.event, filter: t.filter });
  }
  return { triggers: webhook, schedules: schedules.length ? schedules : undefined, inactive_triggers: other.length ? other : undefined };
}

export function agentDef(f: ParsedFile, v: Obj): AgentDef {
  return {
    name: f.name,
    description: v.description,
    agentType: v.agentType === 'MAIN' ? 'FOREMAN' : (v.agentType ?? 'CUSTOM'),
    credentialStrategy: v.credentialStrategy,
    execution: execution(v),
    instructions: promptOf(f.frontMatter?.body ?? ''),
    source: { file: f.path },
  };
}

export function skillDef(f: ParsedFile, v: Obj): SkillDef {
  return {
    name: f.name,
    agent: f.scope,
    description: v.description,
    license: v.license,
    compatibility: v.compatibility,
    allowedTools: v['allowed-tools'],
    metadata: v.metadata,
    instructions: promptOf(f.frontMatter?.body ?? ''),
    source: { file: f.path },
  };
}

/** Warp's defaults: linux on x86_64; macOS is aarch64, version 26. */
export function runnerDef(f: ParsedFile, v: Obj): RunnerDef {
  const p = (v.platform ?? {}) as Obj;
  const os = p.os ?? 'linux';
  return {
    name: f.name,
    description: v.description,
    setupCommands: v.setupCommands ?? [],
    instanceShape: v.instanceShape,
    platform: {
      os,
      arch: p.arch ?? (os === 'macos' ? 'aarch64' : 'x86_64'),
      linux: p.linux,
      mac: os === 'macos' ? { version: p.mac?.version ?? '26' } : undefined,
    },
    source: { file: f.path },
  };
}

const item = (f: ParsedFile, pointer: string, reason: string): InactiveItem => ({ file: f.path, pointer, reason });

/** The execution keys with no meaning here yet; environmentId unless it was honoured. */
const EXECUTION_REASONS: readonly [key: string, reason: string, harnessKey: boolean][] = [
  ['model', 'the model is recorded; runs here execute the environment\'s agent command', true],
  ['harness', 'the harness is recorded; runs here execute the environment\'s agent command', true],
  ['runner', 'the runner is recorded; runs here execute in the local sandbox', true],
  ['secrets', 'Warp managed secrets are recorded; runs here get secrets through an environment\'s env', false],
  ['mcpServers', 'MCP servers are not configured by this runtime', false],
  ['workerHost', 'runs execute on this runtime\'s own host', false],
];

function executionItems(f: ParsedFile, base: string, v: Obj, environmentHonoured: boolean, harnessHonoured = false): InactiveItem[] {
  const out: InactiveItem[] = [];
  // A claude or codex harness, and the runner beside it, run here (docs/definitions.md#warp-agents-run-here).
  for (const [key, reason, harnessKey] of EXECUTION_REASONS) {
    if (v[key] !== undefined && !(harnessHonoured && harnessKey)) out.push(item(f, `${base}/${key}`, reason));
  }
  if (v.environmentId !== undefined && !environmentHonoured) {
    out.push(item(f, `${base}/environmentId`, `'${v.environmentId}' names no environment of this repo, so it is recorded only`));
  }
  return out;
}

/** What the runs of Warp agents here use, looked up once per file instead of by a scan of every run. */
export interface RunsUsed {
  count: number;
  agents: ReadonlySet<string | undefined>;
  runners: ReadonlySet<string | undefined>;
}

export function runsUsed(runs: AgentRun[]): RunsUsed {
  return { count: runs.length, agents: new Set(runs.map((r) => r.agent)), runners: new Set(runs.map((r) => r.runner)) };
}

const NONE: RunsUsed = runsUsed([]);

export const inactiveOf = {
  factory(f: ParsedFile, v: Obj, facts: RepoFacts, used: RunsUsed = NONE): InactiveItem[] {
    const out: InactiveItem[] = [];
    const reasons: Record<string, string> = {
      alias: 'the foreman\'s handle on Slack and Linear, which this runtime does not connect to',
      credentialStrategy: 'runs here execute with the runtime\'s own user',
      repositories: 'an environment\'s repos say what a run clones here',
      secrets: 'Warp managed secrets are recorded; runs here get secrets through an environment\'s env',
      mcpServers: 'MCP servers are not configured by this runtime',
      cloudProviders: 'cloud identity federation is not set up by this runtime',
      integrations: 'Slack, Linear and Jira are not connected to this runtime',
    };
    // The runs of Warp agents clone the repositories (docs/definitions.md#warp-agents-run-here).
    const honoured = new Set(used.count ? ['repositories'] : []);
    for (const [key, reason] of Object.entries(reasons)) if (v[key] !== undefined && !honoured.has(key)) out.push(item(f, `/${key}`, reason));
    if (v.agentDefaults !== undefined) {
      // agentDefaults.environmentId is honoured when it names an environment of the repo.
      const id = v.agentDefaults.environmentId;
      const harness = harnessOf(v.agentDefaults);
      const items = executionItems(f, '/agentDefaults', v.agentDefaults, typeof id === 'string' && facts.environments.has(id), isRunnableHarness(harness?.type));
      const runner = v.agentDefaults.runner;
      out.push(...items.filter((i) => !(i.pointer === '/agentDefaults/runner' && used.runners.has(runner))));
    }
    return out;
  },

  agent(f: ParsedFile, v: Obj, facts: RepoFacts, used: RunsUsed): InactiveItem[] {
    const id = v.environmentId;
    const runs = used.agents.has(f.name);
    return [
      ...(runs ? [] : [item(f, '', 'recorded: no automation runs this agent\'s harness here (claude and codex run when no environment is named; docs/definitions.md#warp-agents-run-here)')]),
      ...executionItems(f, '', v, typeof id === 'string' && facts.environments.has(id), runs),
      ...(v.credentialStrategy !== undefined ? [item(f, '/credentialStrategy', 'runs here execute with the runtime\'s own user')] : []),
    ];
  },

  automation(f: ParsedFile, v: Obj, resolved: { environment?: string; honoured?: string }): InactiveItem[] {
    const out: InactiveItem[] = [];
    const harness = resolved.honoured === 'harness';
    if (resolved.environment === undefined) out.push(item(f, '', 'no environment here, so its runs never start'));
    if (v.agent !== undefined && !harness) out.push(item(f, '/agent', 'the agent is recorded; runs here execute the environment\'s agent command'));
    out.push(...executionItems(f, '', v, resolved.honoured === 'automation', harness));
    (v.triggers as Obj[]).forEach((t, i) => {
      if (t.provider !== 'webhook' && t.provider !== 'schedule') out.push(item(f, `/triggers/${i}`, `${t.provider} triggers are not served by this runtime`));
    });
    return out;
  },

  file(f: ParsedFile, used: RunsUsed = NONE): InactiveItem[] {
    // Skills and runners reach the runs of agents whose harness runs here.
    if (f.kind === 'skill' && (f.scope === undefined ? used.count > 0 : used.agents.has(f.scope))) return [];
    if (f.kind === 'runner' && used.runners.has(f.name)) {
      const v = (f.value ?? {}) as Obj;
      return ['instanceShape', 'platform'].filter((k) => v[k] !== undefined).map((k) => item(f, `/${k}`, 'recorded; runs here execute in the local sandbox'));
    }
    const reasons: Partial<Record<ParsedFile['kind'], string>> = {
      skill: 'skills are recorded; runs here are not given them yet',
      runner: 'runners are recorded; runs here execute in the local sandbox',
      benchmark: 'benchmarks are validated for shape; this runtime does not run them',
      benchmark_task: 'benchmarks are validated for shape; this runtime does not run them',
      scorer: 'scorers are validated for shape; this runtime does not score runs',
    };
    return [item(f, '', reasons[f.kind] ?? 'recorded only')];
  },
};
