import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../runtime/config.ts';
import { startTestRuntime, type TestRuntime } from './helpers.ts';
import { createRun, waitForRun } from './routes/runs-helpers.ts';
import { GITHUB_UID, PR_OPENED, applyFactory, createSecret, deliverGithub, deliveryRuns } from './automations/helpers.ts';
import { eventually } from '../helpers/eventually.ts';

/** `GET /metrics` (docs/runtime.md#metrics): scraped over real HTTP while real deliveries and runs happen. */

/** One sample's value from the text format, or 0 when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(m[3]);
  }
  return 0;
}

describe('metrics on their own port', () => {
  let rt: TestRuntime;
  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${rt.services.metrics!.port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return res.text();
  };
  const hook = { factory: 'shop', webhook: 'github' };

  before(async () => {
    rt = await startTestRuntime({ flags: { metricsPort: 0 } });
    await createSecret(rt);
    await applyFactory(rt, { review: { payload: { action: 'opened' } } });
  });
  after(() => rt.stop());

  it('is not on the API port', async () => {
    assert.notEqual(rt.services.metrics!.port, rt.port);
    const res = await fetch(`${rt.url}/metrics`);
    assert.equal(res.status, 404);
    const other = await fetch(`http://127.0.0.1:${rt.services.metrics!.port}/api/v1/secrets`);
    assert.equal(other.status, 404);
    const post = await fetch(`http://127.0.0.1:${rt.services.metrics!.port}/metrics`, { method: 'POST' });
    assert.equal(post.status, 405);
  });

  it('counts deliveries by webhook and outcome, ingress latency, batches, runs by state and their durations', async () => {
    const before = await scrape();
    for (const name of ['process_cpu_user_seconds_total', 'nodejs_eventloop_lag_seconds']) assert.ok(before.includes(name), name);
    assert.equal(sample(before, 'factory_executor_slots'), rt.config.maxConcurrentRuns);

    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.status, 202);
    assert.equal((await deliverGithub(rt, PR_OPENED, { deliveryId })).res.status, 202);
    const bad = await fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, { method: 'POST', body: '{}', headers: { 'X-Hub-Signature-256': 'sha256=00' } });
    assert.equal(bad.status, 401);
    assert.equal((await fetch(`${rt.url}/webhooks/w/wh_nosuchwebhooknosuchwebhook`, { method: 'POST', body: '{}' })).status, 404);
    const [run] = await deliveryRuns(rt, deliveryId);
    const done = await waitForRun(rt, run.run_id);
    assert.equal(done.state, 'SUCCEEDED');
    // A run through the run API: its create is a batch of the runs writer.
    const created = await createRun(rt, { prompt: 'count me', config: { environment_id: 'agent' } });
    assert.equal(created.res.status, 201, JSON.stringify(created.body));
    assert.equal((await waitForRun(rt, created.body.run_id)).state, 'SUCCEEDED');

    // The executor reports a run once its job has wound down, a moment after the state is written.
    const text = await eventually(scrape, 'two SUCCEEDED run durations in the metrics', {
      until: (t) => sample(t, 'factory_run_duration_seconds_count', { state: 'SUCCEEDED' }) >= 2,
      tries: 200,
    });
    const delta = (name: string, labels: Record<string, string> = {}) => sample(text, name, labels) - sample(before, name, labels);
    assert.equal(delta('factory_deliveries_total', { ...hook, outcome: 'accepted' }), 1);
    assert.equal(delta('factory_deliveries_total', { ...hook, outcome: 'duplicate' }), 1);
    assert.equal(delta('factory_deliveries_total', { ...hook, outcome: 'rejected_auth' }), 1);
    assert.equal(delta('factory_ingress_unrouted_total', { reason: 'not_found' }), 1);
    assert.equal(delta('factory_ingress_duration_seconds_count'), 4);
    // The buckets are cumulative, end with +Inf at the count, and the sum is the seconds observed.
    const les = [...text.matchAll(/^factory_ingress_duration_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)];
    assert.equal(les.length, 14);
    assert.equal(les.at(-1)![1], '+Inf');
    assert.equal(Number(les.at(-1)![2]), sample(text, 'factory_ingress_duration_seconds_count'));
    for (let i = 1; i < les.length; i++) assert.ok(Number(les[i][2]) >= Number(les[i - 1][2]), les[i][0]);
    assert.ok(delta('factory_ingress_duration_seconds_sum') > 0);
    assert.match(text, /^# TYPE factory_ingress_duration_seconds histogram$/m);
    // Three logged requests (accepted, duplicate, rejected): at least one batch, at most three.
    const batches = delta('factory_group_commit_batch_size_count', { writer: 'deliveries' });
    assert.ok(batches >= 1 && batches <= 3, String(batches));
    assert.equal(delta('factory_group_commit_batch_size_sum', { writer: 'deliveries' }), 3);
    assert.equal(delta('factory_group_commit_batch_size_sum', { writer: 'runs' }), 1);
    assert.equal(delta('factory_run_duration_seconds_count', { state: 'SUCCEEDED' }), 2);
    assert.equal(delta('factory_runs', { state: 'SUCCEEDED' }), 2);
    // sample() reads an absent series as 0, so the two gauges must first be there at all.
    assert.match(text, /^factory_run_queue_depth \S+$/m);
    assert.equal(sample(text, 'factory_run_queue_depth'), 0);
    assert.match(text, /^factory_executor_slots_in_use \S+$/m);
    assert.equal(sample(text, 'factory_executor_slots_in_use'), 0);
  });
});

describe('metrics settings', () => {
  it('are off by default; --metrics-port and FACTORY_METRICS_PORT turn them on; the API port is refused', () => {
    assert.equal(parseConfig({ dataDir: '/tmp/x' }, {}).metricsPort, undefined);
    assert.equal(parseConfig({ dataDir: '/tmp/x', metricsPort: '9464' }, {}).metricsPort, 9464);
    assert.equal(parseConfig({ dataDir: '/tmp/x' }, { FACTORY_METRICS_PORT: '9100' }).metricsPort, 9100);
    assert.throws(() => parseConfig({ dataDir: '/tmp/x', port: 9000, metricsPort: 9000 }, {}), /--metrics-port must differ/);
    assert.throws(() => parseConfig({ dataDir: '/tmp/x' }, { FACTORY_METRICS_PORT: 'x' }), /FACTORY_METRICS_PORT must be an integer/);
  });

  it('serve without a metrics port serves none', async () => {
    const rt = await startTestRuntime();
    try {
      assert.equal(rt.services.metrics!.port, undefined);
    } finally {
      await rt.stop();
    }
  });
});
