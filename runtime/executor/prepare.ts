/**
 * What a run needs to execute, prepared by the runtime from the store (docs/runs.md): its
 * environment, the Warp agent's repositories and instructions, the secrets resolved, the
 * attachments. The in-process pool runs it as it is; a remote worker receives it through the worker
 * API (docs/runs.md#workers) and applies its own executor settings (applyIsolation).
 */

import path from 'node:path';
import { repositoryUrl } from '../../core/harness.ts';
import type { EnvironmentDef, RepoDef, WarpExecution } from '../../core/snapshot.ts';
import type { Config } from '../config.ts';
import type { Store } from '../store/index.ts';
import type { RunRecord } from '../store/runs.ts';
import { agentTimeoutProblem, parseDuration } from '../../core/duration.ts';
import type { JobSpec } from './job.ts';
import { isExecutableFile, type Isolation } from './sandbox.ts';
import type { EnvironmentRecord } from '../definitions/state.ts';

/** A job without its place on disk: the same for every executor. */
export type PreparedJob = Omit<JobSpec, 'workspaceDir'> & {
  /** Set for an environment made for a Warp agent: its harness and agent, for a clearer agent_not_found. */
  warp?: { harness: string; agent: string };
};

/** A run that could not be turned into a job: FAILED (the environment is unusable) with a reason. */
export class RunSetupError extends Error {}

/** The job of a claimed run; throws RunSetupError when its environment cannot run it. */
export function prepareJob(deps: { store: Store; config: Config }, run: RunRecord): PreparedJob {
  const env = environmentOf(deps.store, run);
  const warp = env.warp ? warpParts(deps.config, env.warp, run.prompt) : undefined;
  return {
    runId: run.run_id,
    repos: warp ? [...env.repos, ...warp.repos] : env.repos,
    setup: env.setup,
    agent: { command: [...env.agent.command], format: env.agent.format, timeoutMs: parseDuration(env.agent.timeout || '30m') },
    env: resolveEnv(deps.store, env),
    network: env.network ?? 'none',
    prompt: warp?.prompt ?? run.prompt,
    attachments: deps.store.runs.attachmentBytes(run.run_id),
    ...(env.warp ? { warp: { harness: env.warp.harness, agent: env.warp.agent } } : {}),
  };
}

/**
 * The job as this executor runs it: a Warp agent's harness program is looked up in the
 * executor's own --sandbox-ro-bind directories (findInBinds).
 */
export function applyIsolation(job: PreparedJob, isolation: Isolation, workspaceDir: string): JobSpec {
  const { warp, ...spec } = job;
  const command = [...spec.agent.command];
  if (warp && isolation.kind === 'sandbox') command[0] = findInBinds(command[0], isolation.sandbox.roBinds) ?? command[0];
  return { ...spec, agent: { ...spec.agent, command }, workspaceDir };
}

/** A Warp agent's missing harness, said with where this executor looks for programs. */
export function agentNotFoundMessage(message: string | undefined, warp: PreparedJob['warp'], isolation: Isolation): string | undefined {
  if (!warp) return message;
  const where = isolation.kind === 'sandbox' ? "the sandbox's PATH, or a --sandbox-ro-bind directory or its bin/" : "the runtime's PATH";
  return `${message}: the ${warp.harness} harness of agent "${warp.agent}" needs it; install it where runs find programs (${where}) (docs/definitions.md#warp-agents-run-here)`;
}

/**
 * What an environment made for a Warp agent adds at run start (docs/definitions.md#warp-agents-run-here):
 * factory.yaml's repositories from --repository-base, and the agent's instructions and skills before
 * the prompt.
 */
function warpParts(config: Config, warp: WarpExecution, prompt: string): { repos: RepoDef[]; prompt: string } {
  const repos: RepoDef[] = [];
  for (const r of warp.repositories) {
    // Each part is one path segment: `..` or a slash would leave the base (a directory of mirrors).
    if (![r.owner, r.name].every((p) => /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(p))) {
      throw new RunSetupError(`repository "${r.owner}/${r.name}" of agent "${warp.agent}" is not owner/name (letters, digits, _, . and -)`);
    }
    const twin = warp.repositories.some((o) => o !== r && o.name === r.name);
    repos.push({ url: repositoryUrl(config.repositoryBase, r), path: twin ? `${r.owner}/${r.name}` : r.name });
  }
  return { repos, prompt: warp.instructions ? `${warp.instructions}\n\n---\n\n${prompt}` : prompt };
}

/**
 * The environment `run` executes in, or what keeps it from running there (after `the environment
 * "<id>"`): gone, or passed to another factory. A factory's run uses only its own factory's
 * environment: the id may have passed to another factory between the delivery and now
 * (docs/runtime.md#environments-belong-to-their-factory). The retry route asks the same.
 */
export function runEnvironment(store: Store, run: RunRecord): { record: EnvironmentRecord } | { problem: string } {
  const record = store.defs.getEnvironmentRecord(run.config.environment_id);
  if (!record) return { problem: 'no longer exists' };
  if (run.factory && record.factory !== run.factory) return { problem: `now belongs to another factory, not to "${run.factory}"` };
  return { record };
}

function environmentOf(store: Store, run: RunRecord): EnvironmentDef {
  const id = run.config.environment_id;
  const found = runEnvironment(store, run);
  if ('problem' in found) throw new RunSetupError(`the environment "${id}" ${found.problem}`);
  const env = found.record.def;
  // Stored before the rule existed, or by a snapshot from elsewhere: refused here too (core/duration.ts).
  const timeoutProblem = agentTimeoutProblem(env.agent.timeout || '30m');
  if (timeoutProblem) throw new RunSetupError(`the environment "${id}" has an invalid agent.timeout "${env.agent.timeout}": ${timeoutProblem}`);
  return env;
}

/** `{secret: NAME}` values are read at run start, so a rotated secret applies to the next run. */
function resolveEnv(store: Store, env: EnvironmentDef): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env.env ?? {})) {
    if (typeof value === 'string') {
      out[name] = value;
      continue;
    }
    const secret = store.secrets.reveal(value.secret);
    if (secret === undefined) {
      throw new RunSetupError(`the team secret "${value.secret}" for ${name} of environment "${env.name}" does not exist or has no value`);
    }
    out[name] = secret;
  }
  return out;
}

/**
 * A harness program in an operator's read-only bind (`D/prog` or `D/bin/prog`), as its absolute
 * path; undefined when no bind has it, and the sandbox's fixed PATH is searched. A bind is the
 * operator's explicit choice, so it wins over a copy in the system directories.
 */
function findInBinds(program: string, binds: readonly string[]): string | undefined {
  if (program.includes('/')) return undefined;
  for (const dir of binds) {
    for (const p of [path.join(dir, program), path.join(dir, 'bin', program)]) if (isExecutableFile(p)) return p;
  }
  return undefined;
}
