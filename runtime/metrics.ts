import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { CliError } from '../core/errors.ts';
import { RUN_STATES } from '../core/run-state.ts';
import type { ExecutorPool } from './executor/pool.ts';
import type { IngressState } from './ingress/state.ts';
import type { Service, ServiceFactory } from './services.ts';
import type { RunRecord } from './store/runs.ts';

/**
 * `GET /metrics` in the Prometheus text format (docs/runtime.md#metrics), on a port of its own
 * (`--metrics-port`, FACTORY_METRICS_PORT) on the same host as the API: the metrics name
 * factories and webhooks, which an internet-facing webhook port should not tell anyone.
 * Off unless that port is set.
 *
 * Counting costs the hot paths next to nothing: the ingress adds to plain numbers
 * (ingress/metrics.ts), run states and the queue are counted by the database at scrape time,
 * and a run's duration is observed once, when the executor sees it end.
 */
export interface MetricsService extends Service {
  /** The port /metrics is served on once started (the real one when 0 was asked for); undefined when off. */
  readonly port: number | undefined;
  readonly registry: Registry | undefined;
}

declare module './services.ts' {
  interface Services {
    metrics?: MetricsService;
  }
}

/** Run durations from a second to a day: agent runs take minutes. */
const RUN_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400];

/** Builds the registry: the ingress's own metrics, runs, executor, process. */
export function buildRegistry(deps: {
  store: { runs: { countByState(): Record<string, number> } };
  maxConcurrentRuns: number;
  ingress: IngressState | undefined;
  executor: ExecutorPool | undefined;
}): { registry: Registry; runEnded: (run: RunRecord) => void } {
  const own = new Registry();
  collectDefaultMetrics({ register: own });
  const { store, executor } = deps;
  new Gauge({
    name: 'factory_runs',
    help: 'Runs in each state, as the database holds them.',
    labelNames: ['state'],
    registers: [own],
    collect() {
      const counts = store.runs.countByState();
      for (const state of RUN_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
  new Gauge({
    name: 'factory_run_queue_depth',
    help: 'Runs waiting for an executor slot (QUEUED).',
    registers: [own],
    collect() {
      this.set(store.runs.countByState().QUEUED ?? 0);
    },
  });
  new Gauge({
    name: 'factory_executor_slots_in_use',
    help: 'Runs the executor is executing now.',
    registers: [own],
    collect() {
      this.set(executor?.activeCount ?? 0);
    },
  });
  new Gauge({
    name: 'factory_executor_slots',
    help: 'Runs the executor may execute at once (--max-concurrent-runs).',
    registers: [own],
  }).set(deps.maxConcurrentRuns);
  const durations = new Histogram({
    name: 'factory_run_duration_seconds',
    help: 'Time from a run starting to execute to its final state, by final state.',
    labelNames: ['state'],
    buckets: RUN_BUCKETS,
    registers: [own],
  });
  const runEnded = (run: RunRecord) => {
    if (!run.started_at || !run.finished_at) return;
    const seconds = (Date.parse(run.finished_at) - Date.parse(run.started_at)) / 1000;
    if (Number.isFinite(seconds) && seconds >= 0) durations.observe({ state: run.state }, seconds);
  };
  const registry = deps.ingress ? Registry.merge([own, deps.ingress.metrics.registry]) : own;
  return { registry, runEnded };
}

export const metricsService: ServiceFactory = {
  name: 'metrics',
  create({ config, store, log, services }): MetricsService {
    if (config.metricsPort === undefined) return { port: undefined, registry: undefined };
    const executor = services.executor as ExecutorPool | undefined;
    const { registry, runEnded } = buildRegistry({
      store,
      maxConcurrentRuns: config.maxConcurrentRuns,
      ingress: services.ingress,
      executor,
    });
    let server: Server | undefined;
    let port: number | undefined;
    return {
      registry,
      get port() {
        return port;
      },
      async start() {
        executor?.onRunEnd.push(runEnded);
        server = createServer((req, res) => {
          const path = (req.url ?? '/').split('?')[0];
          if (path !== '/metrics') {
            res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Only /metrics is served on this port.\n');
            return;
          }
          if (req.method !== 'GET' && req.method !== 'HEAD') {
            res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('GET /metrics\n');
            return;
          }
          registry.metrics().then(
            (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
            (err: unknown) => {
              log.warn({ err }, 'collecting metrics failed');
              res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Collecting the metrics failed; see the runtime log.\n');
            },
          );
        });
        await new Promise<void>((resolve, reject) => {
          server!.once('error', (err: NodeJS.ErrnoException) =>
            reject(
              err.code === 'EADDRINUSE'
                ? new CliError(`${config.host}:${config.metricsPort} (--metrics-port) is already in use; pick another port.`)
                : err,
            ),
          );
          server!.listen(config.metricsPort, config.host, () => resolve());
        });
        port = (server.address() as AddressInfo).port;
        log.info({ host: config.host, port }, 'metrics served at /metrics');
      },
      async stop() {
        if (executor) executor.onRunEnd.splice(executor.onRunEnd.indexOf(runEnded) >>> 0, 1);
        if (!server) return;
        server.closeAllConnections();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
      },
    };
  },
};
