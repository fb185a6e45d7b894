import { agentEnvironmentId, harnessCommand, HARNESS_PROGRAMS, isRunnableHarness, type RunnableHarness } from '../../core/harness.ts';
import type { AgentDef, EnvironmentDef, FactoryDef, HarnessDef, RunnerDef, SkillDef } from '../../core/snapshot.ts';
import type { RepoFacts } from './warp-rules.ts';

/**
 * Warp agents as local executions (docs/definitions.md#warp-agents-run-here): which harness and
 * runner an automation's runs use, in Warp's order (the automation's own keys, then its agent's,
 * then agentDefaults), and the environment the snapshot gets for it.
 */

type Obj = Record<string, any>;
/** A mapping (not null, not an array); `any` values, since the rules read files that may not match their schema. */
export const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `model: X` is `harness: {type: oz, model: X}`; `claude-code` is `claude`. */
export function harnessOf(v: Obj): HarnessDef | undefined {
  if (typeof v.model === 'string') return { type: 'oz', model: v.model };
  if (!isObject(v.harness)) return undefined;
  const h = v.harness;
  return { ...h, type: h.type === 'claude-code' ? 'claude' : h.type } as HarnessDef;
}

export interface AgentRun {
  /** The environment id, when the harness runs here (claude or codex). */
  id?: string;
  agent?: string;
  harness?: HarnessDef;
  runner?: string;
  /** Set when the automation's own harness or runner applies, so the environment is its own. */
  automation?: string;
  /** Where the harness was set: the automation, its agent, or agentDefaults. */
  harnessFrom?: 'automation' | 'agent' | 'defaults';
}

/**
 * The execution of an automation's runs (`v` its front matter, `automation` its name), or of an
 * agent's own runs (`v` = {agent}). Whole keys win, none is merged: a harness of the automation
 * replaces its agent's entirely, as in Warp.
 */
export function agentRun(v: Obj, facts: RepoFacts, automation?: string): AgentRun {
  const agent = typeof v.agent === 'string' ? v.agent : facts.foreman;
  const a = agent ? facts.agents.get(agent)?.value : undefined;
  if (!agent || !isObject(a)) return {};
  const d = facts.agentDefaults ?? {};
  const fromAutomation = harnessOf(v);
  const fromAgent = harnessOf(a);
  const own = automation !== undefined && (fromAutomation !== undefined || typeof v.runner === 'string');
  const harness = fromAutomation ?? fromAgent ?? harnessOf(d);
  const harnessFrom = fromAutomation ? 'automation' : fromAgent ? 'agent' : 'defaults';
  const runner = [v.runner, a.runner, d.runner].find((r) => typeof r === 'string') as string | undefined;
  const factory = isObject(facts.factory?.value) ? facts.factory.value.name : undefined;
  if (!harness || !isRunnableHarness(harness.type) || typeof factory !== 'string') return { agent, harness, runner };
  const id = own ? agentEnvironmentId('automation', factory, automation!) : agentEnvironmentId('agent', factory, agent);
  return { id, agent, harness, runner, harnessFrom, ...(own ? { automation } : {}) };
}

/** The skills an agent's runs get: every agent's (skills/), then its own (agents/<name>/skills/). */
function skillsOf(agent: string, skills: SkillDef[]): SkillDef[] {
  return [...skills.filter((s) => s.agent === undefined), ...skills.filter((s) => s.agent === agent)];
}

/** The agent's body, then each skill under a heading: put before every run's prompt. */
function instructionsOf(agent: AgentDef | undefined, skills: SkillDef[]): string {
  const parts: string[] = [];
  if (agent?.instructions) parts.push(agent.instructions);
  const own = agent ? skillsOf(agent.name, skills) : [];
  if (own.length) {
    parts.push('# Skills');
    for (const s of own) parts.push([`## ${s.name}`, s.description, s.instructions].filter(Boolean).join('\n\n'));
  }
  return parts.join('\n\n');
}

/** The environment of a Warp agent's runs, from the compiled agent, skills, runners and factory. */
export function agentEnvironment(
  run: AgentRun & { id: string; agent: string; harness: HarnessDef & { type: RunnableHarness } },
  parts: { agents: AgentDef[]; skills: SkillDef[]; runners: RunnerDef[]; factory: FactoryDef; automationFiles: Map<string, string> },
): EnvironmentDef {
  const agent = parts.agents.find((a) => a.name === run.agent);
  const runner = run.runner ? parts.runners.find((r) => r.name === run.runner) : undefined;
  const program = HARNESS_PROGRAMS[run.harness.type];
  const secret = run.harness.auth?.source === 'managedSecret' ? run.harness.auth.secretName : undefined;
  return {
    name: run.id,
    description: `Warp agent ${run.agent}${run.automation ? ` as automation ${run.automation} sets it` : ''}: ${run.harness.type} harness${runner ? `, runner ${runner.name}` : ''}`,
    repos: [],
    setup: runner?.setupCommands ?? [],
    agent: { command: harnessCommand(run.harness), format: program.format, timeout: '30m' },
    env: secret ? { [program.keyVariable]: { secret } } : {},
    // The harness calls its model's API from the sandbox.
    network: 'open',
    warp: {
      agent: run.agent,
      automation: run.automation,
      harness: run.harness.type,
      runner: runner?.name,
      repositories: (parts.factory.repositories ?? []).map((r) => ({ owner: r.owner, name: r.name })),
      instructions: instructionsOf(agent, parts.skills),
    },
    // The file that sets the harness, so plan points at the key's secretName there.
    source:
      run.harnessFrom === 'automation' && run.automation && parts.automationFiles.has(run.automation)
        ? { file: parts.automationFiles.get(run.automation)! }
        : run.harnessFrom === 'agent' && agent ? agent.source : parts.factory.source,
  };
}
