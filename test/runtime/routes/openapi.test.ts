import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Router } from '@koa/router';
import openapiTS, { astToString } from 'openapi-typescript';
import { compile } from '../../../cli/compiler/compile.ts';
import { ROUTES } from '../../../runtime/routes/index.ts';
import { documentAjv } from '../../core/openapi-ajv.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, envYaml, waitForRun } from './runs-helpers.ts';
import { PUBLIC_ROUTES, ROUTE_SCOPES } from './scope-table.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
type Doc = { paths: Record<string, Record<string, { 'x-factory-scope'?: string; security?: unknown[] }>>; servers?: { url: string }[] };
const METHODS = ['get', 'post', 'put', 'delete', 'patch'];
/** What the generated client.ts below exports (its own types come from the generated api.d.ts). */
interface GeneratedClient {
  createAndRead(baseUrl: string, key: string): Promise<{ created: { run_id: string }; status: number; read?: { run_id: string; prompt: string }; listed: string[]; refused?: string }>;
}

/** `/a/{x}/b` and `/a/:y/b` → `/a/{}/b`: routes compared by shape, whatever their parameters are called. */
const shape = (path: string) => path.replace(/\{[^}]+\}|:[A-Za-z_]+/g, '{}');
const operations = (doc: Doc) => Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).filter((m) => METHODS.includes(m)).map((m) => ({ method: m.toUpperCase(), path, op: ops[m] })));
/** A documented path with each parameter filled in with a well-formed placeholder. */
const concrete = (path: string) => path.replace('{run_id}', 'run_' + 'a'.repeat(26)).replace('{uid}', 'wh_' + 'a'.repeat(26)).replace(/\{[^}]+\}/g, 'placeholder');

async function servedDocument(rt: TestRuntime): Promise<Doc> {
  const res = await rt.fetch('/api/v1/openapi.json', { key: null });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  return (await res.json()) as Doc;
}

// Each test has a runtime of its own, so they run side by side.
describe('the OpenAPI document', { concurrency: true }, () => {
  test('the served document names this runtime and covers exactly the routes the router serves under /api/ (and health)', async (t) => {
    const rt = await startTestRuntime();
    t.after(() => rt.stop());
    const doc = await servedDocument(rt);
    assert.deepEqual(doc.servers, [{ url: rt.app.context.deps.config.baseUrl }]);

    const router = new Router();
    for (const register of ROUTES) register(router, rt.app.context.deps);
    const served = new Set<string>();
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string' || !(layer.path.startsWith('/api/') || layer.path === '/healthz' || layer.path === '/readyz')) continue;
      for (const method of layer.methods) if (method !== 'HEAD') served.add(`${method} ${shape(layer.path)}`);
    }
    const documented = new Set(operations(doc).map((o) => `${o.method} ${shape(o.path)}`));
    assert.deepEqual([...served].filter((r) => !documented.has(r)).sort(), [], 'served but not in core/openapi.ts OPERATIONS');
    assert.deepEqual([...documented].filter((r) => !served.has(r)).sort(), [], 'documented but not served');
  });

  test('every documented operation answers on a real runtime: 401 without a key where a scope is named, 200 where none is', async (t) => {
    const rt = await startTestRuntime();
    t.after(() => rt.stop());
    const doc = await servedDocument(rt);
    for (const { method, path, op } of operations(doc)) {
      const res = await rt.fetch(concrete(path), { method, key: null });
      const what = `${method} ${path}`;
      assert.notEqual(res.status, 404, what);
      if (op['x-factory-scope']) {
        assert.equal(res.status, 401, what);
        assert.equal(((await res.json()) as { code: string }).code, 'authentication_required', what);
      } else {
        assert.deepEqual(op.security, [], `${what} needs no key, so it says security: []`);
        assert.equal(res.status, 200, what);
        await res.arrayBuffer();
      }
    }
  });

  test('the scope each operation names is the scope the route enforces (test/runtime/routes/scope-table.ts)', async (t) => {
    const rt = await startTestRuntime();
    t.after(() => rt.stop());
    const doc = await servedDocument(rt);
    for (const { method, path, op } of operations(doc)) {
      if (!path.startsWith('/api/')) continue;
      const pattern = new RegExp('^' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$');
      const rows = [...ROUTE_SCOPES, ...PUBLIC_ROUTES.map((r) => ({ ...r, scope: undefined }))].filter((r) => r.method === method && pattern.test(r.path));
      assert.ok(rows.length > 0, `${method} ${path} has a row in the scope table`);
      for (const row of rows) assert.equal(op['x-factory-scope'], row.scope, `${method} ${path}`);
    }
  });

  test('answers of the main routes match their documented schemas', async (t) => {
    const rt = await startTestRuntime();
    t.after(() => rt.stop());
    await applyEnvironments(rt, { ok: envYaml({ command: ['sh', '-c', 'echo hello from the agent'] }), bad: envYaml({ command: ['false'] }) });
    const ajv = documentAjv((await servedDocument(rt)) as unknown as Record<string, unknown>);
    const check = async (res: Response, status: number, component: string) => {
      const body = await res.json();
      assert.equal(res.status, status, `${component}: ${JSON.stringify(body)}`);
      const validate = ajv.getSchema(`openapi#/components/schemas/${component}`)!;
      assert.ok(validate(body), `${component}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
      return body as Record<string, any>;
    };

    // Plan and apply, as the CLI sends them (runs-helpers applied the environments the same way).
    const { snapshot } = compile([{ path: 'factory.yaml', text: 'name: docs\n' }, { path: 'webhooks/ci.yaml', text: 'secretName: docs-token\n' }]);
    assert.ok(snapshot);
    // A failed runtime check names the file and the check beside the pointer.
    const refused = await check(await rt.fetch('/api/v1/factories/docs/plan', { method: 'POST', json: { snapshot } }), 400, 'Problem');
    assert.equal(refused.errors[0].file, 'webhooks/ci.yaml');
    assert.equal((await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'docs-token', value: 'a-token-of-enough-length-for-a-webhook-0123' } })).status, 201);
    const planned = await check(await rt.fetch('/api/v1/factories/docs/plan', { method: 'POST', json: { snapshot } }), 200, 'PlanResult');
    const applied = await check(await rt.fetch('/api/v1/factories/docs/apply', { method: 'POST', json: { snapshot, base_revision: planned.base_revision, revision: 'abc123' } }), 200, 'ApplyResult');
    assert.equal(applied.webhooks.length, 1);
    await check(await rt.fetch('/api/v1/factories/docs/apply', { method: 'POST', json: { snapshot, base_revision: planned.base_revision } }), 409, 'Problem');

    const created = await check(await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'Say hello', config: { environment_id: 'ok' }, title: 't', metadata: { a: [1] } } }), 201, 'Run');
    const oz = await check(
      await rt.fetch('/api/v1/agent/run', {
        method: 'POST',
        json: { prompt: 'p', config: { environment_id: 'ok', model_id: 'm', name: 'n' }, skill: 's', conversation_id: 'c', team: false, images: [{ data: 'aGk=', mime_type: 'image/png' }] },
      }),
      201,
      'Run',
    );
    assert.equal(oz.agent_skill.name, 's');
    // A generated notification secret is shown once, in the 201; the target refuses connections, so attempts fail.
    const notified = await check(await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'p', config: { environment_id: 'ok' }, webhook: { url: 'http://127.0.0.1:9/hook' } } }), 201, 'Run');
    assert.match(notified.webhook.secret, /^whsec_/);

    const done = await waitForRun(rt, created.run_id);
    assert.equal(done.state, 'SUCCEEDED');
    await waitForRun(rt, notified.run_id);
    await check(await rt.fetch(`/api/v1/agent/runs/${created.run_id}`), 200, 'Run');
    const withNotifications = await check(await rt.fetch(`/api/v1/agent/runs/${notified.run_id}`), 200, 'Run');
    assert.ok(withNotifications.notifications.length > 0);
    const list = await check(await rt.fetch('/api/v1/agent/runs?limit=2'), 200, 'RunList');
    assert.equal(list.page_info.has_next_page, true);
    const page = await check(await rt.fetch(`/api/v1/agent/runs/${created.run_id}/transcript`), 200, 'TranscriptPage');
    assert.ok(page.events.length > 0);
    await check(await rt.fetch(`/api/v1/agent/runs/${created.run_id}/cancel`, { method: 'POST' }), 400, 'Problem');
    const failing = await check(await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'fail', config: { environment_id: 'bad' } } }), 201, 'Run');
    assert.equal((await waitForRun(rt, failing.run_id)).state, 'FAILED');
    const retried = await check(await rt.fetch(`/api/v1/agent/runs/${failing.run_id}/retry`, { method: 'POST' }), 201, 'Run');
    assert.equal(retried.retry_of, failing.run_id);

    const ci = await check(await rt.fetch('/api/v1/factories/hooks/webhooks', { method: 'POST', json: { name: 'ci' } }), 201, 'WebhookChange');
    const gh = await check(await rt.fetch('/api/v1/factories/hooks/webhooks', { method: 'POST', json: { name: 'gh', auth_mode: 'signature', signature_scheme: 'github', secret: 'a-signing-secret' } }), 201, 'WebhookChange');
    const hooks = await check(await rt.fetch('/api/v1/webhooks'), 200, 'WebhookList');
    assert.deepEqual(hooks.webhooks.map((w: { factory: string; name: string }) => `${w.factory}/${w.name}`).sort(), ['docs/ci', 'hooks/ci', 'hooks/gh']);
    await check(await rt.fetch(`/api/v1/webhooks/${gh.webhook.uid}`), 200, 'Webhook');
    await check(await rt.fetch(`/api/v1/webhooks/${gh.webhook.uid}/disable`, { method: 'POST' }), 200, 'WebhookChange');

    // The delivery log: one Accepted delivery and one Rejected (auth), then a replay that starts nothing.
    const sent = await fetch(ci.webhook.url, { method: 'POST', headers: { Authorization: `Bearer ${ci.secret}`, 'Content-Type': 'application/json' }, body: '{"status":"failed"}' });
    assert.equal(sent.status, 202);
    const { delivery_id } = (await sent.json()) as { delivery_id: string };
    assert.equal((await fetch(ci.webhook.url, { method: 'POST', headers: { Authorization: 'Bearer wrong' }, body: '{}' })).status, 401);
    const log = await check(await rt.fetch(`/api/v1/webhooks/${ci.webhook.uid}/deliveries`), 200, 'DeliveryList');
    assert.deepEqual(log.deliveries.map((d: { outcome: string }) => d.outcome), ['rejected_auth', 'accepted']);
    const one = await check(await rt.fetch(`/api/v1/webhooks/${ci.webhook.uid}/deliveries/${encodeURIComponent(delivery_id)}`), 200, 'Delivery');
    assert.deepEqual(one.payload, { status: 'failed' });
    const replayed = await check(await rt.fetch(`/api/v1/webhooks/${ci.webhook.uid}/deliveries/${encodeURIComponent(delivery_id)}/replay`, { method: 'POST' }), 200, 'ReplayResult');
    assert.deepEqual(replayed.runs, []);

    const key = await check(await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'ci', kind: 'agent', scopes: ['runs'] } }), 201, 'KeyCreated');
    await check(await rt.fetch(`/api/v1/keys/${key.id}/revoke`, { method: 'POST' }), 200, 'Key');
    await check(await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'ops', kind: 'personal', scopes: ['manage'], factories: ['hooks'] } }), 201, 'KeyCreated');
    await check(await rt.fetch('/api/v1/keys'), 200, 'KeyList');
    await check(await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'token', value: 'v' } }), 201, 'Secret');
    await check(await rt.fetch('/api/v1/secrets'), 200, 'SecretList');
    await check(await rt.fetch('/api/v1/secrets/token', { method: 'PUT', json: { value: 'v2', grace_seconds: 60 } }), 200, 'Secret');
    await check(await rt.fetch('/api/v1/secrets/token/factories', { method: 'PUT', json: { factories: ['hooks'] } }), 200, 'Secret');
    await check(await rt.fetch('/api/v1/secrets/token/grant', { method: 'POST', json: { factories: ['tests'] } }), 200, 'Secret');
    const bad = await check(await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 7 } }), 400, 'Problem');
    assert.ok(bad.errors.length > 0);
  });

  test('a client generated from the document (openapi-typescript) type-checks, and with openapi-fetch creates and reads a run', async (t) => {
    const rt = await startTestRuntime();
    t.after(() => rt.stop());
    await applyEnvironments(rt, { ok: envYaml({ command: ['true'] }) });
    const dir = mkdtempSync(join(tmpdir(), 'factory-openapi-client-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // The generated files import openapi-fetch and typescript's lib from this repo's node_modules.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));

    const res = await rt.fetch('/api/v1/openapi.json', { key: null });
    writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS((await res.json()) as never)));
    writeFileSync(
      join(dir, 'client.ts'),
      `import createClient from 'openapi-fetch';
  import type { paths } from './api.d.ts';

  export async function createAndRead(baseUrl: string, key: string) {
    const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
    const created = await client.POST('/api/v1/agent/runs', { body: { prompt: 'Summarise the last commit', config: { environment_id: 'ok' } } });
    if (!created.data) throw new Error(\`create failed: \${JSON.stringify(created.error)}\`);
    const runId: string = created.data.run_id;
    const read = await client.GET('/api/v1/agent/runs/{run_id}', { params: { path: { run_id: runId } } });
    const list = await client.GET('/api/v1/agent/runs', { params: { query: { state: ['QUEUED', 'INPROGRESS', 'SUCCEEDED'], limit: 10 } } });
    const refused = await client.POST('/api/v1/agent/runs', { body: { prompt: '' } });
    return { created: created.data, status: created.response.status, read: read.data, listed: list.data?.runs.map((r) => r.run_id) ?? [], refused: refused.error?.code };
  }

  export async function wrongOnPurpose(baseUrl: string) {
    const client = createClient<paths>({ baseUrl });
    // @ts-expect-error prompt is a string
    await client.POST('/api/v1/agent/runs', { body: { prompt: 1 } });
    // @ts-expect-error no such route
    await client.GET('/api/v1/agent/nothing');
  }
  `,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true, lib: ['ES2023', 'DOM'], types: [] }, files: ['client.ts'] }),
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    // tsc fails (status 2, the errors on stdout) when the document's types do not fit the client code.
    try {
      // Not execFileSync: the other tests of this file go on while tsc works.
      await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
    } catch (err) {
      assert.fail(`tsc: ${(err as { stdout?: string }).stdout}`);
    }

    const client = (await import(pathToFileURL(join(dir, 'client.ts')).href)) as GeneratedClient;
    const out = await client.createAndRead(rt.url, rt.adminKey);
    assert.equal(out.status, 201);
    assert.equal(out.read?.run_id, out.created.run_id);
    assert.equal(out.read?.prompt, 'Summarise the last commit');
    assert.ok(out.listed.includes(out.created.run_id));
    assert.equal(out.refused, 'invalid_request');
  });
});
