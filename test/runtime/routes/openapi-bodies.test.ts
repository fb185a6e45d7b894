import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { FactoryError } from '../../../core/errors.ts';
import { API_SCHEMAS, RUN_LIST_QUERY } from '../../../core/openapi.ts';
import { parseCreateWebhook } from '../../../runtime/ingress/lifecycle.ts';
import { LIST_PARAMS, parseCreateRun } from '../../../runtime/routes/run-input.ts';
import { MAX_GRACE_SECONDS } from '../../../runtime/ingress/lifecycle.ts';
import { checkNewKey } from '../../../runtime/store/keys.ts';
import { parseClaim, parseEvents, parseFinish, parseLease } from '../../../runtime/routes/worker.ts';
import { startTestRuntime } from '../helpers.ts';

/**
 * The request schemas under schemas/api/ (docs/api.md#openapi) against the routes' own checks:
 * for each body both accept it or both refuse it. The few rules a schema cannot state (a secret
 * that decodes to 24 to 64 bytes, metadata's size) are left out of the table on purpose.
 */
const ajv = new Ajv({ strict: true, strictRequired: false, allowUnionTypes: true });
for (const schema of Object.values(API_SCHEMAS)) ajv.addSchema(schema);
const schemaAccepts = (name: string, body: unknown) => ajv.getSchema(`https://factory.dev/schemas/api/${name}.schema.json`)!(body) as boolean;
/** True when `check` accepts; a refusal must be a 400 invalid_request (a crash is a failure, not a refusal). */
const accepts = (check: () => unknown) => {
  try {
    check();
    return true;
  } catch (err) {
    assert.ok(err instanceof FactoryError, String(err));
    assert.equal(err.code, 'invalid_request');
    return false;
  }
};
const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const IMAGE = { data: Buffer.from('png').toString('base64'), mime_type: 'image/png' };

test('run-create: the schema and parseCreateRun agree', () => {
  const bodies: unknown[] = [
    { prompt: 'p' },
    { prompt: 'p', config: { environment_id: 'sandbox' } },
    { prompt: 'p', config: { environment_id: 'agent:tools/reviewer' } },
    { prompt: 'p', config: { environment_id: 'Not An Id' } },
    { prompt: 'p', config: { environment_id: null, model_id: 'm', name: null, computer_use_enabled: true, mcp_servers: { a: {} } } },
    { prompt: 'p', config: { mcp_servers: [] } },
    { prompt: 'p', config: { computer_use_enabled: 'yes' } },
    { prompt: 'p', config: { model_id: 'm'.repeat(1001) } },
    { prompt: 'p', config: { other: 1 } },
    { prompt: 'p', config: null },
    { prompt: 'p', config: [] },
    { prompt: '' },
    { prompt: ' \n\t' },
    { prompt: 7 },
    {},
    { skill: 's' },
    { prompt: 'p', title: null, metadata: null, skill: null, conversation_id: null, team: null, images: null, webhook: null },
    { prompt: 'p', title: 't'.repeat(256) },
    { prompt: 'p', title: 't'.repeat(257) },
    { prompt: 'p', metadata: { a: [1, { b: 2 }] } },
    { prompt: 'p', metadata: [1] },
    { prompt: 'p', metadata: 'x' },
    { prompt: 'p', skill: '' },
    { prompt: 'p', conversation_id: 'c'.repeat(1001) },
    { prompt: 'p', team: 'yes' },
    { prompt: 'p', images: [IMAGE] },
    { prompt: 'p', images: Array(6).fill(IMAGE) },
    { prompt: 'p', images: [{ ...IMAGE, mime_type: 'image/bmp' }] },
    { prompt: 'p', images: [{ ...IMAGE, data: 'not base64!' }] },
    { prompt: 'p', images: [{ ...IMAGE, extra: 1 }] },
    { prompt: 'p', images: {} },
    { prompt: 'p', webhook: { url: 'https://hooks.example.com/runs' } },
    { prompt: 'p', webhook: { url: 'https://hooks.example.com/runs', secret: SECRET } },
    { prompt: 'p', webhook: { url: 'ftp://hooks.example.com/runs' } },
    { prompt: 'p', webhook: { url: 'https://hooks.example.com/' + 'a'.repeat(2048) } },
    { prompt: 'p', webhook: { secret: SECRET } },
    { prompt: 'p', webhook: { url: 'https://hooks.example.com/runs', secret: 'plain' } },
    { prompt: 'p', webhook: { url: 'https://hooks.example.com/runs', other: 1 } },
    { prompt: 'p', webhook: 'https://hooks.example.com/runs' },
    { prompt: 'p', extra: true },
    [],
    null,
    'p',
  ];
  for (const body of bodies) {
    assert.equal(schemaAccepts('run-create', body), parseCreateRun(body).errors.length === 0, JSON.stringify(body).slice(0, 200));
  }
});

test('webhook-create: the schema and parseCreateWebhook agree', () => {
  const bodies: unknown[] = [
    { name: 'ci' },
    { name: 'ci', auth_mode: 'url_token', description: 'd', delivery_id_header: 'X-Build-Id' },
    { name: 'gh', auth_mode: 'signature', signature_scheme: 'github', secret: 's', secret_name: 'gh-signing' },
    { name: 'Bad Name' },
    { name: 7 },
    {},
    { name: 'ci', auth_mode: 'magic' },
    { name: 'ci', secret_name: 'has space' },
    { name: 'ci', delivery_id_header: 'not a header' },
    { name: 'ci', extra: 1 },
    { name: 'ci', description: 5 },
    null,
  ];
  for (const body of bodies) {
    assert.equal(schemaAccepts('webhook-create', body), accepts(() => parseCreateWebhook(body)), JSON.stringify(body));
  }
});

test('worker bodies: the schemas and the worker routes\' checks agree (docs/api.md#workers)', () => {
  const id = 'worker-0001';
  const cases: [string, (b: unknown) => unknown, unknown[]][] = [
    ['worker-claim', parseClaim, [
      { worker: 'box', worker_id: id },
      { worker: 'box', worker_id: id, capacity: 0, wait_seconds: 20 },
      { worker: 'box', worker_id: id, capacity: 1000, wait_seconds: 0 },
      { worker: 'b'.repeat(128), worker_id: 'a'.repeat(64) },
      { worker: 'b'.repeat(129), worker_id: id },
      { worker: '', worker_id: id },
      { worker: 'line\nbreak', worker_id: id },
      { worker: 'box', worker_id: 'short' },
      { worker: 'box', worker_id: 'a'.repeat(65) },
      { worker: 'box', worker_id: 'has space!' },
      { worker: 'box', worker_id: id, capacity: 1001 },
      { worker: 'box', worker_id: id, capacity: 1.5 },
      { worker: 'box', worker_id: id, wait_seconds: 21 },
      { worker: 'box', worker_id: id, wait_seconds: '5' },
      { worker: 'box', worker_id: id, extra: 1 },
      { worker_id: id },
      { worker: 'box' },
      [],
      null,
    ]],
    ['worker-lease', parseLease, [{ worker_id: id }, { worker_id: 7 }, {}, { worker_id: id, cancel: true }, 'x']],
    ['worker-events', parseEvents, [
      { worker_id: id, events: [] },
      { worker_id: id, events: [{ type: 'output', data: { text: 'x' } }, { type: 'command', data: {} }, { type: 'message', data: {} }, { type: 'file_change', data: {} }] },
      { worker_id: id, events: Array(500).fill({ type: 'output', data: {} }) },
      { worker_id: id, events: Array(501).fill({ type: 'output', data: {} }) },
      { worker_id: id, events: [{ type: 'state', data: {} }] },
      { worker_id: id, events: [{ type: 'output', data: [] }] },
      { worker_id: id, events: [{ type: 'output', data: null }] },
      { worker_id: id, events: [{ type: 'output' }] },
      { worker_id: id, events: [{ type: 'output', data: {}, seq: 1 }] },
      { worker_id: id, events: {} },
      { worker_id: id },
      { events: [] },
    ]],
    ['worker-finish', parseFinish, [
      { worker_id: id, state: 'SUCCEEDED' },
      { worker_id: id, state: 'FAILED', status_message: 'agent exited with exit code 1', error_code: 'agent_failed' },
      { worker_id: id, state: 'ERROR', status_message: null, error_code: 'worker_lost' },
      { worker_id: id, state: 'CANCELLED', status_message: 'm'.repeat(4096), error_code: 'cancelled' },
      { worker_id: id, state: 'CANCELLED', status_message: 'm'.repeat(4097) },
      { worker_id: id, state: 'QUEUED' },
      { worker_id: id, state: 'FAILED', error_code: 'bogus' },
      { worker_id: id, state: 'FAILED', status_message: 5 },
      { worker_id: id, state: 'FAILED', retryable: true },
      { worker_id: id },
      { state: 'FAILED' },
    ]],
  ];
  for (const [name, parse, bodies] of cases) {
    for (const body of bodies) {
      assert.equal(schemaAccepts(name, body), accepts(() => parse(body)), `${name}: ${JSON.stringify(body).slice(0, 200)}`);
    }
  }
});

test('key-create: the schema and the store\'s checks agree on shapes', () => {
  const bodies: unknown[] = [
    { name: 'ci', kind: 'agent' },
    { name: 'Alice Smith', kind: 'personal', scopes: ['manage', 'runs'], factories: ['web', 'api'] },
    { name: '', kind: 'agent' },
    { name: 'a\nb', kind: 'agent' },
    { name: 'x'.repeat(129), kind: 'agent' },
    { name: 'ci', kind: 'robot' },
    { name: 'ci', kind: 'agent', scopes: [] },
    { name: 'ci', kind: 'agent', scopes: ['runs', 'runs'] },
    { name: 'ci', kind: 'agent', scopes: ['everything'] },
    { name: 'ci', kind: 'agent', scopes: 'runs' },
    { name: 'ci', kind: 'personal', scopes: ['manage'], factories: [] },
    { name: 'ci', kind: 'personal', scopes: ['manage'], factories: ['Not A Name'] },
    { name: 'ci', kind: 'personal', scopes: ['manage'], factories: null },
  ];
  for (const body of bodies) {
    const b = body as Record<string, unknown>;
    const store = accepts(() => checkNewKey({ ...b, scopes: b.scopes === undefined ? ['runs'] : b.scopes }));
    assert.equal(schemaAccepts('key-create', body), store, JSON.stringify(body));
  }
});

test('the secrets routes check bodies against their schemas: a 400 naming each problem, in the field\'s words', async (t) => {
  assert.equal((API_SCHEMAS['secret-update'] as { properties: { grace_seconds: { maximum: number } } }).properties.grace_seconds.maximum, MAX_GRACE_SECONDS);
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  assert.equal((await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'tools', value: 'v1' } })).status, 201);
  const cases: [string, string, unknown, { pointer: string; message: RegExp }[]][] = [
    ['POST', '/api/v1/secrets', { name: 'x', value: 'v', pending: 'yes', extra: 1 }, [{ pointer: '/extra', message: /^unknown key 'extra'$/ }, { pointer: '/pending', message: /^pending must be true or false$/ }]],
    ['POST', '/api/v1/secrets', [], [{ pointer: '', message: /^the body must be an object$/ }]],
    ['POST', '/api/v1/secrets', { name: 'x', value: 7 }, [{ pointer: '/value', message: /^value must be a string$/ }]],
    ['PUT', '/api/v1/secrets/tools', { grace_seconds: 60 }, [{ pointer: '/value', message: /^missing required key 'value'$/ }]],
    ['PUT', '/api/v1/secrets/tools', { value: 'v2', grace_seconds: 1.5 }, [{ pointer: '/grace_seconds', message: /^grace_seconds must be an integer$/ }]],
    ['PUT', '/api/v1/secrets/tools', { value: 'v2', grace_seconds: MAX_GRACE_SECONDS + 1 }, [{ pointer: '/grace_seconds', message: /^grace_seconds must be at most 2592000$/ }]],
    ['PUT', '/api/v1/secrets/tools/factories', { factories: {} }, [{ pointer: '/factories', message: /^factories must be an array or null$/ }]],
    ['POST', '/api/v1/secrets/tools/grant', {}, [{ pointer: '/factories', message: /^missing required key 'factories'$/ }]],
  ];
  for (const [method, path, json, expected] of cases) {
    const res = await rt.fetch(path, { method, json });
    const what = `${method} ${path} ${JSON.stringify(json)}`;
    assert.equal(res.status, 400, what);
    const problem = (await res.json()) as { code: string; detail: string; errors: { pointer: string; message: string }[] };
    assert.equal(problem.code, 'invalid_request', what);
    assert.equal(problem.errors.length, expected.length, `${what}: ${JSON.stringify(problem.errors)}`);
    expected.forEach((e, i) => {
      assert.equal(problem.errors[i].pointer, e.pointer, what);
      assert.match(problem.errors[i].message, e.message, what);
    });
    assert.equal(problem.detail, `The request is not valid: ${expected[0].pointer || 'body'}: ${problem.errors[0].message}.`, what);
  }
  // Nothing was written by the refused requests.
  assert.equal(((await (await rt.fetch('/api/v1/secrets/tools')).json()) as { current_version: number }).current_version, 1);
  assert.equal((await rt.fetch('/api/v1/secrets/x')).status, 404);
});

test('the run list\'s documented parameters are the ones parseListRuns reads', () => {
  assert.deepEqual(RUN_LIST_QUERY.map((p) => p.name).sort(), [...LIST_PARAMS].sort());
});
