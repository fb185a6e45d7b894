import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metric, Registry } from 'prom-client';
import { RUN_STATES } from '../core/run-state.ts';
import type { ExecutorPool } from './executor/pool.ts';
import type { Buckets, IngressMetrics } from './ingress/metrics.ts';
import { WEBHOOK_OUTCOMES } from './ingress/metrics.ts';
import type { IngressState } from './ingress/state.ts';
import { capConnections, HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS, type ConnectionStats } from './http/connection-cap.ts';
import type { Service, ServiceFactory } from './services.ts';
import type { ClockCheck } from './clock-check.ts';
import type { RunRecord } from './store/runs.ts';
import { listen } from './listen.ts';

/**
 * `GET /metrics` in the Prometheus text format (docs/runtime.md#metrics), on a port of its own
 * (`--metrics-port`, FACTORY_METRICS_PORT) on the same host as the API: the metrics name
 * factories and webhooks, which an internet-facing webhook port should not tell anyone.
 * Off unless that port is set.
 *
 * Counting costs the hot paths next to nothing: the ingress adds to plain numbers
 * (ingress/metrics.ts), run states and the queue are counted by the database at scrape time,
 * and a run's duration is observed once, when the executor sees it end. The Prometheus client
 * is loaded when the service starts, so a runtime without metrics never loads it.
 */
export interface MetricsService extends Service {
  /** The port /metrics is served on once started (the real one when 0 was asked for); undefined when off. */
  readonly port: number | undefined;
  /** The registry once started; undefined before and when off. */
  readonly registry: Registry | undefined;
}

declare module './services.ts' {
  interface Services {
    metrics?: MetricsService;
  }
}

/** Connections the metrics port holds at once (docs/runtime.md#metrics). */
export const METRICS_MAX_CONNECTIONS = 16;
/** Run durations from a second to a day: agent runs take minutes. */
const RUN_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400];

type PromClient = typeof import('prom-client');

/** Builds the registry: the ingress's own metrics, runs, executor, process. */
export function buildRegistry(prom: PromClient, deps: {
  store: { runs: { countByState(): Record<string, number> } };
  maxConcurrentRuns: number;
  ingress: IngressState | undefined;
  executor: ExecutorPool | undefined;
  connections?: ConnectionStats;
  /** Replicas on PostgreSQL: the last difference between this machine's clock and the database's (runtime/clock-check.ts). */
  clock?: Pick<ClockCheck, 'last'>;
}): { registry: Registry; runEnded: (run: RunRecord) => void } {
  const { collectDefaultMetrics, Gauge, Histogram, Registry } = prom;
  const own = new Registry();
  collectDefaultMetrics({ register: own });
  const { store, executor } = deps;
  // One count of the runs per scrape serves both gauges: the queue depth is set with the states.
  const queueDepth = new Gauge({
    name: 'factory_run_queue_depth',
    help: 'Runs waiting for an executor slot (QUEUED).',
    registers: [],
  });
  new Gauge({
    name: 'factory_runs',
    help: 'Runs in each state, as the database holds them.',
    labelNames: ['state'],
    registers: [own],
    collect() {
      const counts = store.runs.countByState();
      for (const state of RUN_STATES) this.set({ state }, counts[state] ?? 0);
      queueDepth.set(counts.QUEUED ?? 0);
    },
  });
  own.registerMetric(queueDepth);
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
  if (deps.ingress) registerIngress(prom, own, deps.ingress.metrics);
  const connections = deps.connections;
  if (connections) {
    new prom.Counter({
      name: 'factory_http_connections_refused_total',
      help: 'Connections closed as they arrived because --max-connections were open.',
      registers: [own],
      collect() {
        this.reset();
        this.inc(connections.refused);
      },
    });
    new Gauge({ name: 'factory_http_max_connections', help: 'Connections the HTTP server holds at once (--max-connections).', registers: [own] }).set(connections.max);
  }
  const clock = deps.clock;
  if (clock) {
    new Gauge({
      name: 'factory_clock_skew_seconds',
      help: "This machine's clock minus the database server's, at the last check (replicas on PostgreSQL).",
      registers: [own],
      collect() {
        if (clock.last) this.set(clock.last.skewMs / 1000);
      },
    });
  }
  return { registry: own, runEnded };
}

/** The ingress's counts (ingress/metrics.ts) as Prometheus metrics, read at each scrape. */
function registerIngress(prom: PromClient, registry: Registry, metrics: IngressMetrics): void {
  new prom.Counter({
    name: 'factory_deliveries_total',
    help: 'Requests to a webhook, by outcome: the delivery log outcomes, handshake (answered, no run) and rate_limited (429, not logged).',
    labelNames: ['factory', 'webhook', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const e of metrics.webhooks()) {
        for (const outcome of WEBHOOK_OUTCOMES) this.inc({ factory: e.factory, webhook: e.webhook, outcome }, e.counts[outcome]);
      }
    },
  });
  new prom.Counter({
    name: 'factory_ingress_aborted_total',
    help: 'Deliveries whose sender closed the connection before the body ended (also counted as rejected_invalid_json).',
    labelNames: ['factory', 'webhook'],
    registers: [registry],
    collect() {
      this.reset();
      for (const e of metrics.webhooks()) this.inc({ factory: e.factory, webhook: e.webhook }, e.counts.aborted);
    },
  });
  new prom.Counter({
    name: 'factory_ingress_unrouted_total',
    help: 'Ingress requests that reached no webhook: not_found (404: unknown, disabled or deleted) and method_not_allowed (405).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ reason: 'not_found' }, metrics.not_found);
      this.inc({ reason: 'method_not_allowed' }, metrics.method_not_allowed);
    },
  });
  registry.registerMetric(
    histogram('factory_ingress_duration_seconds', 'Time from a webhook request arriving to its answer, including the group commit.', [
      [{}, metrics.latency],
    ]),
  );
  registry.registerMetric(
    histogram(
      'factory_group_commit_batch_size',
      'Writes committed together in one transaction, by writer: deliveries (the delivery log) or runs (run API creates).',
      [
        [{ writer: 'deliveries' }, metrics.batchSize.deliveries],
        [{ writer: 'runs' }, metrics.batchSize.runs],
      ],
    ),
  );
}

/**
 * A histogram whose counts live in plain `Buckets` (one series per label set), as a metric the
 * registry can print: it asks `get()` for the samples, in the shape the client's own histograms
 * give: a cumulative `_bucket` per bound and `+Inf`, then `_sum` and `_count`.
 */
function histogram(name: string, help: string, series: [Record<string, string>, Buckets][]): Metric {
  const get = async () => {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const [labels, b] of series) {
      let cumulative = 0;
      b.bounds.forEach((le, i) => {
        cumulative += b.counts[i];
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: b.count });
      values.push({ metricName: `${name}_sum`, labels, value: b.sum });
      values.push({ metricName: `${name}_count`, labels, value: b.count });
    }
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  };
  // The registry reads a metric through `name` and `get()` alone; its types only name its own classes.
  return { name, help, type: 'histogram', aggregator: 'sum', get, reset() {} } as unknown as Metric;
}

export const metricsService: ServiceFactory = {
  name: 'metrics',
  create({ config, store, log, services }): MetricsService {
    const metricsPort = config.metricsPort;
    if (metricsPort === undefined) return { port: undefined, registry: undefined };
    const executor = services.executor as ExecutorPool | undefined;
    let server: Server | undefined;
    let port: number | undefined;
    let built: ReturnType<typeof buildRegistry> | undefined;
    return {
      get registry() {
        return built?.registry;
      },
      get port() {
        return port;
      },
      async start() {
        const metrics = buildRegistry(await import('prom-client'), {
          store,
          maxConcurrentRuns: config.maxConcurrentRuns,
          ingress: services.ingress,
          executor,
          connections: services.connections,
          clock: services.clock,
        });
        built = metrics;
        executor?.onRunEnd.push(metrics.runEnded);
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
          metrics.registry.metrics().then(
            (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
            (err: unknown) => {
              log.warn({ err }, 'collecting metrics failed');
              res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Collecting the metrics failed; see the runtime log.\n');
            },
          );
        });
        // A scraper needs one connection at a time: a few, and the API port's time limits on a
        // request, so that this port cannot hold the descriptors the runtime needs
        // (docs/runtime.md#metrics).
        capConnections(server, METRICS_MAX_CONNECTIONS, log, { listener: 'the metrics port', flag: null });
        server.headersTimeout = HEADERS_TIMEOUT_MS;
        server.requestTimeout = REQUEST_TIMEOUT_MS;
        await listen(server, config.host, metricsPort, '--metrics-port');
        port = (server.address() as AddressInfo).port;
        log.info({ host: config.host, port }, 'metrics served at /metrics');
      },
      async stop() {
        if (executor && built) executor.onRunEnd.splice(executor.onRunEnd.indexOf(built.runEnded) >>> 0, 1);
        if (!server) return;
        server.closeAllConnections();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
      },
    };
  },
};
