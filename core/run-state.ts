/**
 * The run state machine (docs/api.md): a table of allowed transitions, nothing else.
 * QUEUED → INPROGRESS → SUCCEEDED | FAILED; ERROR (the platform failed) and CANCELLED may end a
 * run from QUEUED or INPROGRESS. A finished run never changes again.
 */

export const RUN_STATES = ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'] as const;
export type RunState = (typeof RUN_STATES)[number];

/**
 * QUEUED → ERROR exists for a run that cannot even start (e.g. its environment was removed or a
 * secret it needs is gone); QUEUED → FAILED does not, because FAILED means the agent or its setup
 * failed, which needs a started run.
 */
const TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = Object.freeze({
  QUEUED: ['INPROGRESS', 'CANCELLED', 'ERROR'],
  INPROGRESS: ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'],
  SUCCEEDED: [],
  FAILED: [],
  ERROR: [],
  CANCELLED: [],
});

/** True when `s` is one of the run states. */
export function isRunState(s: unknown): s is RunState {
  return typeof s === 'string' && (RUN_STATES as readonly string[]).includes(s);
}

/** True when a run may move from `from` to `to`. */
export function canTransition(from: RunState, to: RunState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** True for the finished states, which never change again. */
export function isFinal(state: RunState): boolean {
  return TRANSITIONS[state].length === 0;
}

/** The states a run may move to from `from` (for error messages and the store's SQL guards). */
export function sourcesOf(to: RunState): RunState[] {
  return RUN_STATES.filter((from) => canTransition(from, to));
}

/**
 * Machine codes of why a run ended other than SUCCEEDED (the run's `error_code`, docs/api.md).
 * These describe the run, not an HTTP request, so they are not in core/errors.ts.
 */
export const RUN_ERROR_CODES = [
  'environment_invalid',
  'repo_failed',
  'setup_failed',
  'agent_not_found',
  'agent_failed',
  'agent_timeout',
  'workspace_too_large',
  'cancelled',
  'runtime_stopped',
  'worker_lost',
  'platform_error',
] as const;
export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

/** How a cancelled run ends, wherever the cancel lands: the executor, a worker's holder, the route. */
export const CANCELLED_END = Object.freeze({ statusMessage: 'the run was cancelled', errorCode: 'cancelled' as const });
