/**
 * `factory worker` (docs/runs.md#workers): executes runs of a runtime on this machine, over the
 * worker API only (no database). Claims QUEUED runs while below its concurrency, runs each with
 * runJob under this machine's isolation, streams the transcript in small batches, renews the lease,
 * stops a run on cancel or when its lease is lost (409), and finishes it.
 *
 * Network errors are retried with backoff while the runs go on; a 409 means the lease is gone
 * (the run was ended by the runtime's sweeper or was cancelled): the run's processes are stopped
 * and nothing more is sent for it.
 */

import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WorkerClaim } from '../routes/worker.ts';
import { runJob, type JobResult, type TranscriptEventInput } from './job.ts';
import { agentNotFoundMessage, applyIsolation, type PreparedJob } from './prepare.ts';
import { workDirMode, type Isolation } from './sandbox.ts';
import { removeWorkspace } from './workspace.ts';
import { killRunGroups } from './process.ts';
import { lockDataDir, type DataDirLock } from '../data-dir-lock.ts';
import { RUN_ID_PATTERN } from '../../core/ids.ts';

export const WORKER_STOPPED_MESSAGE = 'the worker executing the run stopped while the run was in progress';

export interface RemoteWorkerOptions {
  server: string;
  apiKey: string;
  name: string;
  concurrency: number;
  isolation: Isolation;
  workDir: string;
  inheritedEnv: Readonly<Record<string, string>>;
  /** One line per run started and finished, and warnings. */
  say: (line: string) => void;
}

/** A refusal the worker cannot retry away (a bad key, a missing scope): it stops. */
export class WorkerFatal extends Error {}

class LeaseLost extends Error {}

/** `.run_….worker`: a worker's mark beside each workspace it runs (prepareWorkDir). */
const MARK = /^\.(run_[a-z2-7]{26})\.worker$/;
const workerMark = (workDir: string, runId: string) => path.join(workDir, `.${runId}.worker`);
/** The runtime refused a request about a run as malformed or too large (a 4xx): sending it again cannot help. */
class Refused extends Error {}

interface Answer {
  status: number;
  body: unknown;
}

/** Events per batch, and bytes, so a batch stays well under the runtime's body limit. */
const BATCH_EVENTS = 100;
const BATCH_BYTES = 256 * 1024;
const FLUSH_MS = 200;
const CLAIM_WAIT_SECONDS = 20;
const MAX_BACKOFF_MS = 15_000;
const HEARTBEAT_MAX_MS = 2_000;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

interface Job {
  runId: string;
  abort: AbortController;
  lost: boolean;
  queue: TranscriptEventInput[];
  /** Events the runtime has taken, in order: the next batch's `first_index`. */
  sent: number;
  done: Promise<void>;
}

export class RemoteWorker {
  /** Random per start: with the key, the holder of this worker's leases. */
  readonly id = randomBytes(12).toString('base64url');
  private readonly jobs = new Map<string, Job>();
  private stopping = false;
  /** While stopping, reports are retried until then only. */
  private stopDeadline = 0;
  private readonly stopSignal = new AbortController();
  private leaseMs = 30_000;
  private loop: Promise<void> | undefined;
  private lock: DataDirLock | undefined;
  /** Set while requests fail on the network: said once per outage. */
  private away = false;
  /** Set when the worker stopped on its own (a fatal refusal). */
  fatal: WorkerFatal | undefined;

  constructor(private readonly opts: RemoteWorkerOptions) {}

  /** Starts the claim loop; resolves when it has ended (stop, or a fatal refusal). */
  run(): Promise<void> {
    this.loop ??= this.prepareWorkDir().then(() => this.claimLoop());
    return this.loop;
  }

  /**
   * Takes the work dir for this worker alone (a lock, as a runtime takes its data dir), then ends
   * what a worker before it left there: one killed (SIGKILL, OOM) kept no record of its runs, so
   * their workspaces, and under `direct` their processes, would stay for ever (docs/runs.md#workers).
   */
  private async prepareWorkDir(): Promise<void> {
    const dir = this.opts.workDir;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    this.lock = lockDataDir(dir, 'stop it first, or give this worker its own --work-dir', { dir: 'work dir', holder: 'worker' });
    for (const entry of await readdir(dir)) {
      const runId = MARK.exec(entry)?.[1];
      if (runId === undefined || !RUN_ID_PATTERN.test(runId)) continue;
      const killed = killRunGroups(runId);
      await removeWorkspace(path.join(dir, runId));
      await rm(path.join(dir, entry), { force: true });
      this.opts.say(`removed the workspace of ${runId} left by a worker that stopped without cleaning up${killed ? `, and ended ${killed} process group(s) of it` : ''}`);
    }
  }

  /**
   * Stops claiming, stops the runs in progress and finishes them ERROR (runtime_stopped,
   * retryable), as a stopping serve does.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopDeadline = Date.now() + 5_000;
    this.stopSignal.abort();
    for (const job of this.jobs.values()) job.abort.abort();
    await Promise.all([...this.jobs.values()].map((j) => j.done));
    await this.loop?.catch(() => {});
    this.lock?.release();
  }

  /** One request; network failures and 5xx are thrown as retryable Errors, other answers returned. */
  private async call(method: string, route: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
    try {
      const answer = await this.request(method, route, body, signal);
      if (this.away) this.opts.say(`reached the runtime at ${this.opts.server} again`);
      this.away = false;
      return answer;
    } catch (err) {
      if (!this.away && !signal?.aborted) this.opts.say(`cannot reach the runtime at ${this.opts.server} (${(err as Error).message}); retrying with backoff, runs go on`);
      this.away = !signal?.aborted;
      throw err;
    }
  }

  private async request(method: string, route: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
    const res = await fetch(this.opts.server + route, {
      method,
      headers: { Authorization: `Bearer ${this.opts.apiKey}`, 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.status >= 500 || res.status === 429) throw new Error(`the runtime answered ${res.status}`);
    return { status: res.status, body: parsed };
  }

  private static detail(a: Answer): string {
    const d = (a.body as { detail?: unknown } | undefined)?.detail;
    return typeof d === 'string' ? d : `the runtime answered ${a.status}`;
  }

  /** A request about a run that retries network errors with backoff until it gets an answer or `give up`. */
  private async leaseCall(job: Job, route: string, body: Record<string, unknown>): Promise<unknown> {
    const until = () => !this.stopping || Date.now() < this.stopDeadline;
    let backoff = 500;
    for (;;) {
      try {
        const a = await this.call('POST', `/api/v1/worker/runs/${job.runId}/${route}`, { worker_id: this.id, ...body });
        if (a.status === 409 || a.status === 404) throw new LeaseLost(RemoteWorker.detail(a));
        if (a.status === 401 || a.status === 403) throw new WorkerFatal(RemoteWorker.detail(a));
        if (a.status >= 400) throw new Refused(RemoteWorker.detail(a));
        return a.body;
      } catch (err) {
        if (err instanceof LeaseLost || err instanceof WorkerFatal || err instanceof Refused) throw err;
        if (!until()) throw err;
        await sleep(backoff);
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
      }
    }
  }

  private async claimLoop(): Promise<void> {
    let backoff = 500;
    while (!this.stopping) {
      const free = this.opts.concurrency - this.jobs.size;
      if (free <= 0) {
        await Promise.race([...this.jobs.values()].map((j) => j.done));
        continue;
      }
      let a: Answer;
      try {
        a = await this.call('POST', '/api/v1/worker/claim', { worker: this.opts.name, worker_id: this.id, capacity: free, wait_seconds: CLAIM_WAIT_SECONDS }, this.stopSignal.signal);
      } catch (err) {
        if (this.stopping) break;
        await sleep(backoff, this.stopSignal.signal);
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
        continue;
      }
      backoff = 500;
      if (a.status === 204) continue;
      if (a.status !== 200) {
        this.fatal = new WorkerFatal(RemoteWorker.detail(a));
        this.stopping = true;
        for (const job of this.jobs.values()) job.abort.abort();
        break;
      }
      this.launch(a.body as WorkerClaim);
    }
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }

  private launch(claim: WorkerClaim): void {
    this.leaseMs = claim.lease_seconds * 1000;
    const job: Job = { runId: claim.run.run_id, abort: new AbortController(), lost: false, queue: [], sent: 0, done: Promise.resolve() };
    this.jobs.set(job.runId, job);
    job.done = this.execute(claim, job)
      .catch((err) => this.opts.say(`run ${job.runId}: ${(err as Error).message}`))
      .finally(() => this.jobs.delete(job.runId));
  }

  private async execute(claim: WorkerClaim, job: Job): Promise<void> {
    const { say } = this.opts;
    say(`started ${job.runId} (environment ${claim.run.config.environment_id})`);
    const lose = (err: unknown) => {
      if (err instanceof LeaseLost) {
        if (!job.lost) say(`lost the lease of ${job.runId}: ${err.message}; stopping it`);
        job.lost = true;
        job.abort.abort();
      } else if (err instanceof WorkerFatal) {
        job.abort.abort();
      }
    };

    // Heartbeats every third of the lease, and at least every 2 seconds: a cancel arrives in their
    // answer, so it reaches the run within seconds (docs/runs.md#workers).
    const heartbeat = setInterval(() => {
      this.call('POST', `/api/v1/worker/runs/${job.runId}/heartbeat`, { worker_id: this.id })
        .then((a) => {
          if (a.status === 409 || a.status === 404) lose(new LeaseLost(RemoteWorker.detail(a)));
          else if (a.status === 200 && (a.body as { cancel?: boolean }).cancel) job.abort.abort();
        })
        .catch(() => {
          // The network: the next beat tries again; the lease outlives two missed beats.
        });
    }, Math.max(200, Math.min(HEARTBEAT_MAX_MS, Math.floor(this.leaseMs / 3))));

    // Events are sent in order, in small batches, by one sender at a time.
    let sending: Promise<void> = Promise.resolve();
    const notes = new WeakSet<object>();
    const flush = () => {
      sending = sending.then(async () => {
        while (job.queue.length && !job.lost) {
          let bytes = 0;
          let n = 0;
          while (n < job.queue.length && n < BATCH_EVENTS && (n === 0 || bytes < BATCH_BYTES)) bytes += Buffer.byteLength(JSON.stringify(job.queue[n++]));
          const batch = job.queue.slice(0, n);
          try {
            // `first_index` lets the runtime skip what it took already when a lost answer makes this batch go again.
            const answer = (await this.leaseCall(job, 'events', { events: batch, first_index: job.sent })) as { cancel?: boolean };
            job.queue.splice(0, n);
            job.sent += n;
            if (answer?.cancel) job.abort.abort();
          } catch (err) {
            if (err instanceof Refused && !batch.every((e) => notes.has(e))) {
              // Refused as it is (too large, say): each of its events becomes one line saying so,
              // so the transcript keeps its order and the run goes on being reported. Notes
              // refused in turn stay queued, and go again with the next flush.
              this.opts.say(`the runtime refused ${n} event(s) of ${job.runId} (${err.message}); sending a note in their place`);
              const replaced = batch.map((e) => {
                const note = { type: 'output' as const, data: { stream: 'stderr', text: `[a transcript event of ${Buffer.byteLength(JSON.stringify(e))} bytes was refused by the runtime: ${err.message}]\n`, truncated: true } };
                notes.add(note);
                return note;
              });
              job.queue.splice(0, n, ...replaced);
              continue;
            }
            lose(err);
            return;
          }
        }
      });
      return sending;
    };
    const flusher = setInterval(() => void flush(), FLUSH_MS);

    const workspace = path.join(this.opts.workDir, job.runId);
    let prepared: PreparedJob | undefined;
    let result: JobResult | undefined;
    let failure: unknown;
    try {
      prepared = { ...claim.job, attachments: claim.job.attachments.map((a) => ({ name: a.name, bytes: Buffer.from(a.data, 'base64') })) };
      await mkdir(this.opts.workDir, { recursive: true, mode: 0o700 });
      await chmod(this.opts.workDir, workDirMode(this.opts.isolation));
      // The mark that this workspace is a worker's: only such workspaces does a worker starting
      // after a crash take as left behind (a runtime's own, in a work dir shared with it, have none).
      await writeFile(workerMark(this.opts.workDir, job.runId), '');
      result = await runJob(applyIsolation(prepared, this.opts.isolation, workspace), {
        signal: job.abort.signal,
        onEvent: (e) => {
          if (job.lost) return;
          job.queue.push(e);
          if (job.queue.length >= BATCH_EVENTS) void flush();
        },
        inheritedEnv: this.opts.inheritedEnv,
        isolation: this.opts.isolation,
      });
    } catch (err) {
      failure = err;
    }
    clearInterval(flusher);
    await flush();
    clearInterval(heartbeat);

    let state: string;
    let statusMessage: string | undefined;
    let errorCode: string | undefined;
    if (failure !== undefined || !result) {
      say(`run ${job.runId} failed in the worker: ${(failure as Error)?.message ?? 'unknown error'}`);
      [state, statusMessage, errorCode] = ['ERROR', 'the worker could not prepare or run the workspace', 'platform_error'];
    } else if (result.state === 'CANCELLED' && this.stopping) {
      [state, statusMessage, errorCode] = ['ERROR', WORKER_STOPPED_MESSAGE, 'runtime_stopped'];
    } else {
      state = result.state;
      statusMessage = result.errorCode === 'agent_not_found' ? agentNotFoundMessage(result.statusMessage, prepared?.warp, this.opts.isolation) : result.statusMessage;
      errorCode = result.errorCode;
    }
    let reported = false;
    if (!job.lost) {
      // While stopping, the finish is tried for a few seconds only; the sweeper ends the run otherwise.
      try {
        await this.leaseCall(job, 'finish', { state, status_message: statusMessage ?? null, error_code: errorCode ?? null });
        reported = true;
      } catch (err) {
        lose(err);
        if (!(err instanceof LeaseLost)) say(`could not report the end of ${job.runId}: ${(err as Error).message}`);
      }
    }
    // No retention here: the run's transcript is on the runtime (docs/runs.md#workers).
    await removeWorkspace(workspace).catch(() => {});
    await rm(workerMark(this.opts.workDir, job.runId), { force: true }).catch(() => {});
    if (reported) say(`finished ${job.runId} ${state}${statusMessage ? `: ${statusMessage}` : ''}`);
    else if (job.lost) say(`finished ${job.runId} without reporting it: its lease was lost`);
  }
}
