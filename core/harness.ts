/**
 * How a Warp agent runs here (docs/definitions.md#warp-agents-run-here): the harness type picks the
 * agent program, the transcript reader and the variable its API key goes in. Pure tables and names,
 * shared by the compiler (which writes the agent's environment into the snapshot) and the executor.
 */

import type { AgentFormat, HarnessDef } from './snapshot.ts';

export interface HarnessProgram {
  /** argv before the model option; the prompt arrives on stdin. */
  command: string[];
  format: AgentFormat;
  /** Where `harness.auth.secretName`'s value goes. */
  keyVariable: string;
}

/**
 * The harnesses this runtime can execute. Both run unattended inside the run's sandbox, which is
 * the boundary (docs/security.md#sandbox), so their own permission prompts are turned off: nobody
 * could answer them.
 */
export const HARNESS_PROGRAMS: Readonly<Record<'claude' | 'codex', HarnessProgram>> = {
  claude: {
    command: ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'],
    format: 'claude-stream-json',
    keyVariable: 'ANTHROPIC_API_KEY',
  },
  codex: {
    command: ['codex', 'exec', '--json', '--dangerously-bypass-approvals-and-sandbox'],
    format: 'codex-json',
    keyVariable: 'OPENAI_API_KEY',
  },
};

export type RunnableHarness = keyof typeof HARNESS_PROGRAMS;

/** A harness with a program above: adding one to HARNESS_PROGRAMS makes it runnable. */
export function isRunnableHarness(type: string | undefined): type is RunnableHarness {
  return type !== undefined && Object.hasOwn(HARNESS_PROGRAMS, type);
}

/** The full argv of a harness: its program, then `--model M` when the harness names one. */
export function harnessCommand(h: HarnessDef & { type: RunnableHarness }): string[] {
  const base = HARNESS_PROGRAMS[h.type].command;
  const argv = h.model ? [...base, '--model', h.model] : [...base];
  // codex exec reads the prompt from stdin when it is given as `-`.
  return h.type === 'codex' ? [...argv, '-'] : argv;
}

/**
 * The id of the environment the compiler makes for an agent (`agent:<factory>/<agent>`) or for an
 * automation that overrides its agent's harness or runner (`automation:<factory>/<automation>`).
 * Environment ids are unique across the runtime, so the factory is part of the id.
 */
export function agentEnvironmentId(kind: 'agent' | 'automation', factory: string, name: string): string {
  return `${kind}:${factory}/${name}`;
}

/** An environment id: a name of an environments/ file, or one the compiler made for a Warp agent. */
export const ENVIRONMENT_ID_PATTERN = /^(?:(?:agent|automation):[a-z0-9][a-z0-9-]{0,62}\/)?[a-z0-9][a-z0-9-]{0,62}$/;

/** `owner/repo` under the operator's --repository-base: a URL, or a directory of mirrors. */
export function repositoryUrl(base: string, repo: { owner: string; name: string }): string {
  return `${base.replace(/\/+$/, '')}/${repo.owner}/${repo.name}`;
}
