/**
 * The executor pool (docs/runs.md): at most `maxConcurrentRuns` jobs at once, each a QUEUED run
 * claimed oldest first with one conditional UPDATE (runtime/store/runs.ts), run by runJob in
 * `<workDir>/<run_id>` under the configured executor (sandbox.ts; checked once at start). The store
 * writes every state change with its `state` transcript event; this module only decides which
 * change happens.
 *
 * Woken when a run is created (`wake()`), and by a slow poll as a safety net. At start, runs left
 * INPROGRESS by a previous process become ERROR, retryable (docs/runs.md). Workspaces of finished
 * runs are removed after the retention period; transcripts stay.
 */

import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { accessSync, constants, statSync } from 'node:fs';
import { repositoryUrl } from '../../core/harness.ts';
import type { EnvironmentDef, RepoDef, WarpExecution } from '../../core/snapshot.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Service, ServiceFactory } from '../services.ts';
import type { Store } from '../store/index.ts';
import type { FinalState, FinishInput, RunRecord } from '../store/runs.ts';
import { parseDuration } from './duration.ts';
import { runJob, type JobResult } from './job.ts';
import { killOrphanGroup } from './process.ts';
import { assertIsolation, isolationOf, type Isolation } from './sandbox.ts';
import { removeWorkspace } from './workspace.ts';

declare module '../services.ts' {
  interface Services {
    executor?: ExecutorPool;
  }
}

export const RUNTIME_STOPPED_MESSAGE = 'the runtime stopped while the run was in progress';
const POLL_MS = 2_000;
const CLEANUP_EVERY_MS = 10 * 60_000;

export interface PoolDeps {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
}

export interface PoolOptions {
  pollMs?: number;
  /** How often finished runs' workspaces are checked for removal (default 10 minutes). */
  cleanupEveryMs?: number;
}

/** A run that could not be turned into a job: FAILED (the environment is unusable) with a reason. */
class RunSetupError extends Error {}

export class ExecutorPool implements Service {
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Told of every run this pool executed once it has ended, as the store has it (the run-duration metric). */
  readonly onRunEnd: ((run: RunRecord) => void)[] = [];
  private paused = false;
  private stopping = false;
  private started = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private cleanupTimer: NodeJS.Timeout | undefined;
  private cleaning: Promise<number> | undefined;
  private readonly workspacesDir: string;
  private readonly isolation: Isolation;
  private workDirReady: Promise<void> | undefined;

  constructor(
    private readonly deps: PoolDeps,
    private readonly options: PoolOptions = {},
  ) {
    this.workspacesDir = deps.config.workDir;
    this.isolation = isolationOf(deps.config);
  }

  /** Restart recovery, first clean-up, then the poll. */
  async start(): Promise<void> {
    // Never weaken silently: a sandbox that cannot start stops the runtime with one sentence.
    assertIsolation(this.isolation);
    if (this.isolation.kind === 'direct' && !this.deps.config.directAnnounced) {
      this.deps.log.warn(
        { executor: 'direct', runAs: this.isolation.runAs },
        'runs execute without a sandbox (--executor direct): their commands see this machine as the runtime does, network and other runs included (docs/security.md#executors)',
      );
    }
    this.recover();
    this.started = true;
    await this.cleanWorkspaces();
    this.pollTimer = setInterval(() => this.wake(), this.options.pollMs ?? POLL_MS);
    this.pollTimer.unref();
    this.cleanupTimer = setInterval(() => {
      this.cleanWorkspaces().catch((err) => this.deps.log.warn({ err }, 'workspace clean-up failed'));
    }, this.options.cleanupEveryMs ?? CLEANUP_EVERY_MS);
    this.cleanupTimer.unref();
    this.wake();
  }

  /**
   * The work dir, made when the first run starts (a runtime that runs nothing leaves none): private
   * to the runtime, except that a direct run as another user must be able to pass through it to
   * its own workspace (0711: no listing of other runs' workspaces).
   */
  private prepareWorkDir(): Promise<void> {
    this.workDirReady ??= this.makeWorkDir().catch((err) => {
      this.workDirReady = undefined;
      throw err;
    });
    return this.workDirReady;
  }

  private async makeWorkDir(): Promise<void> {
    const mode = this.isolation.kind === 'direct' && this.isolation.runAs ? 0o711 : 0o700;
    await mkdir(this.workspacesDir, { recursive: true, mode });
    await chmod(this.workspacesDir, mode);
    // Its default sits next to the data dir, often inside a git repo: keep it out of commits.
    await writeFile(path.join(this.workspacesDir, '.gitignore'), '# factory run workspaces. Never commit.\n*\n', { flag: 'wx' }).catch(() => {});
  }

  /**
   * Stops claiming and ends the runs in progress as ERROR (retryable), as a restart would: their
   * processes are killed with their groups, so nothing outlives the runtime.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.pollTimer);
    clearInterval(this.cleanupTimer);
    for (const job of this.running.values()) job.abort.abort();
    await Promise.all([...this.running.values()].map((j) => j.done));
    await this.cleaning?.catch(() => {});
  }

  /**
   * Runs found INPROGRESS at start were cut off by a stop or crash of the runtime: ERROR, retryable
   * (docs/runs.md). A crash (SIGKILL) left their process groups running, since each leads its own
   * group; those recorded for the run are killed first (killOrphanGroup says how a reused id is
   * avoided).
   */
  recover(): string[] {
    const { store, log } = this.deps;
    const ids = store.runs.inProgressIds();
    for (const id of ids) {
      for (const pgid of store.runs.processGroups(id)) {
        const outcome = killOrphanGroup(pgid, id);
        if (outcome === 'killed') log.warn({ runId: id, pgid }, 'killed a process group left running by the previous runtime');
        if (outcome === 'unverified') log.warn({ runId: id, pgid }, 'a process group of this run may still be running; it could not be verified as the run\'s, so it was left alone');
      }
      store.runs.finish(id, 'ERROR', { statusMessage: RUNTIME_STOPPED_MESSAGE, errorCode: 'runtime_stopped', retryable: true });
    }
    if (ids.length) log.warn({ runs: ids }, 'runs that were in progress when the runtime stopped are now ERROR');
    return ids;
  }

  /** Holds QUEUED runs where they are (the benchmark measures creates alone). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.wake();
  }

  get activeCount(): number {
    return this.running.size;
  }

  /** Claims QUEUED runs while there is room. Cheap to call often. */
  wake(): void {
    if (!this.started || this.paused || this.stopping) return;
    while (this.running.size < this.deps.config.maxConcurrentRuns) {
      const run = this.deps.store.runs.claimNext();
      if (!run) return;
      this.launch(run);
    }
  }

  /**
   * Aborts the job of an INPROGRESS run (SIGTERM to its process group, SIGKILL after a grace);
   * the run then ends CANCELLED. False when this pool does not run it.
   */
  cancel(runId: string): boolean {
    const job = this.running.get(runId);
    if (!job) return false;
    job.abort.abort();
    return true;
  }

  /** Resolves once no job is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((j) => j.done));
  }

  private launch(run: RunRecord): void {
    const abort = new AbortController();
    const done = this.execute(run, abort.signal)
      .catch((err) => this.deps.log.error({ err, runId: run.run_id }, 'executor failed to record a run outcome'))
      .finally(() => {
        this.running.delete(run.run_id);
        if (this.onRunEnd.length) {
          const ended = this.deps.store.runs.get(run.run_id);
          if (ended) for (const hear of this.onRunEnd) hear(ended);
        }
        this.wake();
      });
    this.running.set(run.run_id, { abort, done });
  }

  private async execute(run: RunRecord, signal: AbortSignal): Promise<void> {
    const { store, log } = this.deps;
    log.info({ runId: run.run_id, environment: run.config.environment_id, creator: `${run.creator.type} ${run.creator.name}` }, 'run started');
    const finish = (state: FinalState, outcome: FinishInput) => {
      store.runs.finish(run.run_id, state, outcome);
      log.info({ runId: run.run_id, state, statusMessage: outcome.statusMessage ?? undefined }, 'run finished');
    };
    let result: JobResult;
    let env: EnvironmentDef | undefined;
    try {
      env = this.environmentOf(run);
      const warp = env.warp ? this.warpParts(env, env.warp, run.prompt) : undefined;
      await this.prepareWorkDir();
      result = await runJob(
        {
          runId: run.run_id,
          workspaceDir: path.join(this.workspacesDir, run.run_id),
          repos: warp ? [...env.repos, ...warp.repos] : env.repos,
          setup: env.setup,
          agent: { command: warp?.command ?? env.agent.command, format: env.agent.format, timeoutMs: parseDuration(env.agent.timeout || '30m') },
          env: this.resolveEnv(env),
          network: env.network ?? 'none',
          prompt: warp?.prompt ?? run.prompt,
          attachments: store.runs.attachmentBytes(run.run_id),
        },
        {
          signal,
          onEvent: (e) => store.runs.appendEvent(run.run_id, e.type, e.data),
          inheritedEnv: this.deps.config.inheritedEnv,
          isolation: this.isolation,
          onGroup: (event, pgid) => {
            try {
              if (event === 'start') store.runs.addProcessGroup(run.run_id, pgid);
              else store.runs.removeProcessGroup(run.run_id, pgid);
            } catch (err) {
              // The record only serves a later crash recovery; the run itself goes on.
              log.warn({ err, runId: run.run_id, pgid }, 'could not record a process group');
            }
          },
        },
      );
    } catch (err) {
      if (err instanceof RunSetupError) {
        finish('FAILED', { statusMessage: err.message, errorCode: 'environment_invalid', retryable: false });
        return;
      }
      log.error({ err, runId: run.run_id }, 'run failed in the executor');
      finish('ERROR', {
        statusMessage: 'the runtime could not prepare or run the workspace',
        errorCode: 'platform_error',
        retryable: true,
      });
      return;
    }
    if (result.state === 'CANCELLED' && this.stopping) {
      finish('ERROR', { statusMessage: RUNTIME_STOPPED_MESSAGE, errorCode: 'runtime_stopped', retryable: true });
      return;
    }
    let statusMessage = result.statusMessage;
    if (env?.warp && result.errorCode === 'agent_not_found') {
      const where = this.isolation.kind === 'sandbox' ? "the sandbox's PATH, or a --sandbox-ro-bind directory or its bin/" : "the runtime's PATH";
      statusMessage = `${statusMessage}: the ${env.warp.harness} harness of agent "${env.warp.agent}" needs it; install it where runs find programs (${where}) (docs/definitions.md#warp-agents-run-here)`;
    }
    finish(result.state, { statusMessage, errorCode: result.errorCode, retryable: false });
  }

  /**
   * What an environment made for a Warp agent adds at run start (docs/definitions.md#warp-agents-run-here):
   * factory.yaml's repositories from --repository-base, the agent's instructions and skills before
   * the prompt, and the harness program found in a --sandbox-ro-bind directory (findInBinds).
   */
  private warpParts(env: EnvironmentDef, warp: WarpExecution, prompt: string): { repos: RepoDef[]; command: string[]; prompt: string } {
    const repos: RepoDef[] = [];
    for (const r of warp.repositories) {
      // Each part is one path segment: `..` or a slash would leave the base (a directory of mirrors).
      if (![r.owner, r.name].every((p) => /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(p))) {
        throw new RunSetupError(`repository "${r.owner}/${r.name}" of agent "${warp.agent}" is not owner/name (letters, digits, _, . and -)`);
      }
      const twin = warp.repositories.some((o) => o !== r && o.name === r.name);
      repos.push({ url: repositoryUrl(this.deps.config.repositoryBase, r), path: twin ? `${r.owner}/${r.name}` : r.name });
    }
    const command = [...env.agent.command];
    if (this.isolation.kind === 'sandbox') command[0] = findInBinds(command[0], this.isolation.sandbox.roBinds) ?? command[0];
    return { repos, command, prompt: warp.instructions ? `${warp.instructions}\n\n---\n\n${prompt}` : prompt };
  }

  private environmentOf(run: RunRecord): EnvironmentDef {
    const id = run.config.environment_id;
    const record = this.deps.store.defs.getEnvironmentRecord(id);
    if (!record) throw new RunSetupError(`the environment "${id}" no longer exists`);
    // A factory's run uses only its own factory's environment: the id may have passed to another
    // factory between the delivery and now (docs/runtime.md#environments-belong-to-their-factory).
    if (run.factory && record.factory !== run.factory) {
      throw new RunSetupError(`the environment "${id}" now belongs to another factory, not to "${run.factory}"`);
    }
    const env = record.def;
    try {
      parseDuration(env.agent.timeout || '30m');
    } catch {
      throw new RunSetupError(`the environment "${id}" has an invalid agent.timeout "${env.agent.timeout}"`);
    }
    return env;
  }

  /** `{secret: NAME}` values are read at run start, so a rotated secret applies to the next run. */
  private resolveEnv(env: EnvironmentDef): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(env.env ?? {})) {
      if (typeof value === 'string') {
        out[name] = value;
        continue;
      }
      const secret = this.deps.store.secrets.reveal(value.secret);
      if (secret === undefined) {
        throw new RunSetupError(`the team secret "${value.secret}" for ${name} of environment "${env.name}" does not exist or has no value`);
      }
      out[name] = secret;
    }
    return out;
  }

  /**
   * Removes workspaces of runs finished longer ago than the retention period (docs/runs.md); at
   * start and then every CLEANUP_EVERY_MS. Calls while one is under way share it.
   */
  cleanWorkspaces(): Promise<number> {
    this.cleaning ??= this.cleanOnce().finally(() => {
      this.cleaning = undefined;
    });
    return this.cleaning;
  }

  private async cleanOnce(): Promise<number> {
    const { store, clock, config, log } = this.deps;
    const before = new Date(clock.now().getTime() - config.limits.workspaceRetentionHours * 3_600_000);
    let removed = 0;
    for (const runId of store.runs.workspacesDue(before, 1000)) {
      try {
        await removeWorkspace(path.join(this.workspacesDir, runId));
        store.runs.markWorkspaceRemoved(runId);
        removed++;
      } catch (err) {
        log.warn({ err, runId }, 'could not remove a workspace');
      }
    }
    store.runs.pruneIdempotency();
    return removed;
  }
}

/**
 * A harness program in an operator's read-only bind (`D/prog` or `D/bin/prog`), as its absolute
 * path; undefined when no bind has it, and the sandbox's fixed PATH is searched. A bind is the
 * operator's explicit choice, so it wins over a copy in the system directories.
 */
function findInBinds(program: string, binds: readonly string[]): string | undefined {
  if (program.includes('/')) return undefined;
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  for (const dir of binds) {
    for (const p of [path.join(dir, program), path.join(dir, 'bin', program)]) if (executable(p)) return p;
  }
  return undefined;
}

/** The pool as a server service (runtime/services.ts). */
export const executorService: ServiceFactory = {
  name: 'executor',
  create: (deps) => new ExecutorPool(deps),
};
