/**
 * The executor pool (docs/runs.md): at most `maxConcurrentRuns` jobs at once, each a QUEUED run
 * claimed oldest first with one conditional UPDATE (runtime/store/runs.ts), run by runJob in
 * `<workDir>/<run_id>` under the configured executor (sandbox.ts; checked once at start). The store
 * writes every state change with its `state` transcript event; this module only decides which
 * change happens.
 *
 * Woken when a run is created (`wake()`), and by a slow poll as a safety net. Each run is held with
 * a lease that the pool renews, like a remote worker's (docs/runs.md#workers): a run whose lease was
 * lost is stopped, and a cancel asked through another replica arrives on CANCEL_CHANNEL. At start,
 * runs left INPROGRESS by a previous process become ERROR, retryable (docs/runs.md). Workspaces of
 * finished runs are removed after the retention period; transcripts stay.
 */

import { randomBytes } from 'node:crypto';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Service, ServiceFactory } from '../services.ts';
import type { Store } from '../store/index.ts';
import { CANCEL_CHANNEL, LEASE_LOST, type LeaseHolder } from '../store/leases.ts';
import type { FinalState, FinishInput, RunRecord } from '../store/runs.ts';
import { runJob, type JobResult } from './job.ts';
import { agentNotFoundMessage, applyIsolation, prepareJob, RunSetupError, type PreparedJob } from './prepare.ts';
import { killOrphanGroup } from './process.ts';
import { assertIsolationAsync, isolationOf, workDirMode, type Isolation } from './sandbox.ts';
import { removeWorkspace } from './workspace.ts';

declare module '../services.ts' {
  interface Services {
    executor?: ExecutorPool;
  }
}

export const RUNTIME_STOPPED_MESSAGE = 'the runtime stopped while the run was in progress';
const POLL_MS = 2_000;
const CLEANUP_EVERY_MS = 10 * 60_000;
/** A run's outcome that could not be written is tried again this often, this many times in all (ten minutes). */
const FINISH_RETRY_MS = 1_000;
const FINISH_TRIES = 600;

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


interface RunningJob {
  abort: AbortController;
  done: Promise<void>;
  /** Set when a heartbeat found the lease gone: the run has ended, nothing more is recorded. */
  lost: boolean;
}

/** A lease holder for this process: a random id per start, and who it is for people. */
export function newHolder(name: string): LeaseHolder {
  return { id: randomBytes(9).toString('base64url'), name };
}

export class ExecutorPool implements Service {
  private readonly running = new Map<string, RunningJob>();
  /** This pool's leases (docs/runs.md#workers). */
  readonly holder: LeaseHolder = newHolder(`${hostname()}/${process.pid}`);
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private unlisten: (() => void) | undefined;
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
    // Never weaken silently: a sandbox that cannot start stops the runtime with one sentence. The
    // probe may already be under way (`factory serve` starts it while the runtime loads).
    await assertIsolationAsync(this.isolation);
    if (this.isolation.kind === 'direct' && !this.deps.config.directAnnounced) {
      this.deps.log.warn(
        { executor: 'direct', runAs: this.isolation.runAs },
        'runs execute without a sandbox (--executor direct): their commands see this machine as the runtime does, network and other runs included (docs/security.md#executors)',
      );
    }
    this.recover();
    this.started = true;
    // In the background: workspaces due for removal after a long stop (thousands of files each)
    // must not keep the runtime from answering, webhooks included.
    this.cleanWorkspaces().catch((err) => this.deps.log.warn({ err }, 'workspace clean-up failed'));
    this.pollTimer = setInterval(() => this.wake(), this.options.pollMs ?? POLL_MS);
    this.pollTimer.unref();
    // Heartbeats every third of the lease; a cancel asked through another replica arrives on the
    // channel, or at the latest with the next heartbeat (docs/runs.md#workers).
    this.heartbeatTimer = setInterval(() => this.heartbeat(), Math.max(200, Math.floor((this.deps.config.leaseSeconds * 1000) / 3)));
    this.heartbeatTimer.unref();
    this.unlisten = this.deps.store.listen(CANCEL_CHANNEL, (runId) => this.cancel(runId));
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
    const mode = workDirMode(this.isolation);
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
    clearInterval(this.heartbeatTimer);
    this.unlisten?.();
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
    // One process owns a SQLite file: every run in progress was this runtime's, but for those a
    // remote worker still holds. On PostgreSQL, runs with a live lease belong to other replicas or
    // workers (docs/runs.md#workers).
    const ids = store.engine === 'sqlite' ? store.leases.notHeldByLiveWorkerIds() : store.leases.expiredInProgressIds();
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
      const run = this.deps.store.leases.claim(this.holder, this.deps.config.leaseSeconds * 1000);
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

  /**
   * Renews the leases of this pool's runs; aborts a run whose lease is gone (the sweeper ended it)
   * or whose cancel was asked elsewhere.
   */
  heartbeat(): void {
    if (!this.running.size) return;
    let held;
    try {
      held = new Map(this.deps.store.leases.renewAll(this.holder, this.deps.config.leaseSeconds * 1000).map((h) => [h.runId, h.cancel]));
    } catch (err) {
      this.deps.log.warn({ err }, 'could not renew the leases of runs in progress');
      return;
    }
    for (const [runId, job] of this.running) {
      // A lease of a run this pool executes that ran out unswept (the process was paused) is taken back.
      if (!held.has(runId) && !job.lost) {
        const back = this.deps.store.leases.reclaim(runId, this.holder, this.deps.config.leaseSeconds * 1000);
        if (back !== LEASE_LOST) held.set(runId, back.cancel);
      }
      const cancel = held.get(runId);
      if (cancel === undefined) {
        if (!job.lost) this.deps.log.warn({ runId }, 'the lease of a run in progress was lost; stopping it');
        job.lost = true;
        job.abort.abort();
      } else if (cancel) job.abort.abort();
    }
  }

  /** Resolves once no job is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((j) => j.done));
  }

  private launch(run: RunRecord): void {
    const job: RunningJob = { abort: new AbortController(), done: Promise.resolve(), lost: false };
    job.done = this.execute(run, job)
      .catch((err) => this.deps.log.error({ err, runId: run.run_id }, 'executor failed to record a run outcome'))
      .finally(() => {
        this.running.delete(run.run_id);
        if (this.onRunEnd.length) {
          const ended = this.deps.store.runs.get(run.run_id);
          if (ended) for (const hear of this.onRunEnd) hear(ended);
        }
        this.wake();
      });
    this.running.set(run.run_id, job);
  }

  private async execute(run: RunRecord, job: RunningJob): Promise<void> {
    const { store, log } = this.deps;
    const signal = job.abort.signal;
    log.info({ runId: run.run_id, environment: run.config.environment_id, creator: `${run.creator.type} ${run.creator.name}` }, 'run started');
    // Transcript events that could not be stored (a full disk): the run goes on, and says so at its end.
    let unstored = 0;
    const finish = async (state: FinalState, outcome: FinishInput) => {
      // The outcome is known and worth keeping: a failed write (a full disk) is tried again each
      // second, the run still held (its lease renewed), until it is stored or the runtime stops
      // (docs/runs.md#workers).
      for (let attempt = 1; ; attempt++) {
        if (unstored > 0) {
          try {
            store.runs.appendEvent(run.run_id, 'output', { stream: 'stderr', text: `[${unstored} transcript event(s) of this run could not be stored: the runtime's storage failed]\n`, truncated: true });
            unstored = 0;
          } catch {
            // Still failing: tried again with the outcome.
          }
        }
        try {
          // Only while this pool holds the run's lease (docs/runs.md#workers): a lost lease ended it already.
          if (store.leases.finish(run.run_id, this.holder, state, outcome) === LEASE_LOST) {
            log.warn({ runId: run.run_id, state }, 'the run\'s lease was lost; its outcome was not recorded');
            return;
          }
          break;
        } catch (err) {
          if (this.stopping || attempt >= FINISH_TRIES) throw err;
          if (attempt === 1) log.warn({ err, runId: run.run_id, state }, 'could not record the outcome of a run; trying again every second');
          await new Promise((resume) => setTimeout(resume, FINISH_RETRY_MS));
        }
      }
      log.info({ runId: run.run_id, state, statusMessage: outcome.statusMessage ?? undefined }, 'run finished');
    };
    let result: JobResult;
    let prepared: PreparedJob | undefined;
    try {
      prepared = prepareJob(this.deps, run);
      await this.prepareWorkDir();
      result = await runJob(applyIsolation(prepared, this.isolation, path.join(this.workspacesDir, run.run_id)), {
        signal,
        // Events of a run whose lease was lost are dropped: it has ended (docs/runs.md#workers).
        onEvent: (e) => {
          if (job.lost) return;
          try {
            store.runs.appendEvent(run.run_id, e.type, e.data);
          } catch (err) {
            if (unstored++ === 0) log.warn({ err, runId: run.run_id }, 'could not store a transcript event of a run; the run goes on');
          }
        },
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
      });
    } catch (err) {
      if (err instanceof RunSetupError) {
        await finish('FAILED', { statusMessage: err.message, errorCode: 'environment_invalid', retryable: false });
        return;
      }
      log.error({ err, runId: run.run_id }, 'run failed in the executor');
      await finish('ERROR', {
        statusMessage: 'the runtime could not prepare or run the workspace',
        errorCode: 'platform_error',
        retryable: true,
      });
      return;
    }
    if (result.state === 'CANCELLED' && this.stopping) {
      await finish('ERROR', { statusMessage: RUNTIME_STOPPED_MESSAGE, errorCode: 'runtime_stopped', retryable: true });
      return;
    }
    const statusMessage = result.errorCode === 'agent_not_found' ? agentNotFoundMessage(result.statusMessage, prepared.warp, this.isolation) : result.statusMessage;
    await finish(result.state, { statusMessage, errorCode: result.errorCode, retryable: false });
    // A workspace past its disk limit is not kept for the day finished ones are (docs/security.md#limits):
    // runs that each left one behind would fill the disk the limit protects. Its transcript stays.
    if (result.errorCode === 'workspace_too_large') await this.removeRunWorkspace(run.run_id);
  }

  /** Removes a finished run's workspace and records it (its transcript stays); false, logged, when it could not. */
  private async removeRunWorkspace(runId: string): Promise<boolean> {
    try {
      await removeWorkspace(path.join(this.workspacesDir, runId));
      this.deps.store.runs.markWorkspaceRemoved(runId);
      return true;
    } catch (err) {
      this.deps.log.warn({ err, runId }, 'could not remove a workspace');
      return false;
    }
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
    const { store, clock, config } = this.deps;
    const before = new Date(clock.now().getTime() - config.limits.workspaceRetentionHours * 3_600_000);
    let removed = 0;
    for (const runId of store.runs.workspacesDue(before, 1000)) {
      if (await this.removeRunWorkspace(runId)) removed++;
    }
    store.runs.pruneIdempotency();
    return removed;
  }
}

/** The pool as a server service (runtime/services.ts). */
export const executorService: ServiceFactory = {
  name: 'executor',
  create: (deps) => new ExecutorPool(deps),
  // --no-executor: runs are left to workers (docs/runs.md#workers).
  enabled: (config) => config.executeRuns,
};
