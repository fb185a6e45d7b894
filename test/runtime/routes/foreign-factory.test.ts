import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '@koa/router';
import { compile } from '../../../cli/compiler/compile.ts';
import { ROUTES } from '../../../runtime/routes/index.ts';
import { createSecret, deliverGithub, factoryFiles, GITHUB_UID, OTHER_UID, PR_OPENED, FACTORY } from '../automations/helpers.ts';
import { runCliInProcess, terminalEnv, type CliResult } from '../../helpers/cli.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { ROUTE_SCOPES } from './scope-table.ts';

/**
 * A `manage` key limited to one factory gets, for anything of another factory, exactly the answer
 * of something that does not exist: same status, same code, same sentence (with the name or UID
 * the caller sent in it), and nothing that names the other factory. Every manage route of the
 * runtime is in CASES (the last test checks that against the router), through a real server.
 */

const OWN = 'elsewhere';
const OWN_ENV = 'elsewhere-agent';
const UNKNOWN_UID = 'wh_nosuchnosuchnosuchnosuchno';
const UNKNOWN_FACTORY = 'nosuch';
/** The id of the foreign factory's schedule (or, for UNKNOWN_FACTORY, of one that does not exist). */
const SCHEDULE = (factory: string) => `${factory}/nightly/nightly`;

let rt: TestRuntime;
let key: string;
let deliveryId: string;

before(async () => {
  rt = await startTestRuntime();
  await createSecret(rt);
  // The foreign factory: a webhook automation and one with a schedule (for the schedule routes).
  const foreignFiles = [
    ...factoryFiles({ review: {} }),
    { path: 'automations/nightly.md', text: '---\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule:\n      name: nightly\n      cron: "@daily"\nenvironment: agent\n---\nThe nightly sweep.\n' },
  ];
  const foreignBuilt = compile(foreignFiles);
  assert.ok(foreignBuilt.snapshot, JSON.stringify(foreignBuilt.diagnostics));
  const foreignApplied = await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot: foreignBuilt.snapshot } });
  assert.equal(foreignApplied.status, 200, await foreignApplied.clone().text());
  const sent = await deliverGithub(rt, PR_OPENED);
  assert.equal(sent.res.status, 202);
  deliveryId = sent.deliveryId;

  // The key's own factory, with its own webhook, environment and an automation (for Test filter).
  const ownSecret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'elsewhere-github', value: 'own secret' } });
  assert.equal(ownSecret.status, 201);
  const files = factoryFiles({ mine: { uids: [OTHER_UID] } }, { gh: OTHER_UID }).map((f) => ({
    path: f.path.replace('environments/agent.yaml', `environments/${OWN_ENV}.yaml`),
    text: f.text
      .replace(`name: ${FACTORY}`, `name: ${OWN}`)
      .replace('secretName: github-webhook', 'secretName: elsewhere-github')
      .replace('"environment":"agent"', `"environment":"${OWN_ENV}"`),
  }));
  const { snapshot, diagnostics } = compile(files);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  const applied = await rt.fetch(`/api/v1/factories/${OWN}/apply`, { method: 'POST', json: { snapshot } });
  assert.equal(applied.status, 200, await applied.clone().text());

  const created = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'limited', kind: 'agent', scopes: ['manage'], factories: [OWN] } });
  assert.equal(created.status, 201);
  key = ((await created.json()) as { key: string }).key;
});
after(() => rt.stop());

interface Case {
  method: 'GET' | 'POST' | 'DELETE';
  /** The request for something of the foreign factory, and for something that does not exist. */
  foreign: { path: string; body?: unknown; id: string };
  unknown: { path: string; body?: unknown; id: string };
}

const uidCase = (method: Case['method'], suffix = '', body?: unknown): Case => ({
  method,
  foreign: { path: `/api/v1/webhooks/${GITHUB_UID}${suffix}`, body, id: GITHUB_UID },
  unknown: { path: `/api/v1/webhooks/${UNKNOWN_UID}${suffix}`, body, id: UNKNOWN_UID },
});
const factoryCase = (method: Case['method'], path: (f: string) => string, body?: unknown): Case => ({
  method,
  foreign: { path: path(FACTORY), body, id: FACTORY },
  unknown: { path: path(UNKNOWN_FACTORY), body, id: UNKNOWN_FACTORY },
});

const CASES = (): Case[] => [
  // runtime/routes/definitions.ts
  factoryCase('POST', (f) => `/api/v1/factories/${f}/plan`, { snapshot: {} }),
  factoryCase('POST', (f) => `/api/v1/factories/${f}/apply`, { snapshot: {} }),
  factoryCase('GET', (f) => `/api/v1/webhooks?factory=${f}`),
  factoryCase('GET', (f) => `/api/v1/webhooks?factory=${f}&include_deleted=true`),
  uidCase('GET'),
  // runtime/routes/webhooks-manage.ts
  factoryCase('POST', (f) => `/api/v1/factories/${f}/webhooks`, { name: 'sneaky' }),
  uidCase('POST', '/enable'),
  uidCase('POST', '/disable'),
  uidCase('POST', '/rotate'),
  uidCase('POST', '/rotate', { secret: 'chosen by the attacker' }),
  uidCase('POST', '/secret', { secret: 'chosen by the attacker' }),
  uidCase('DELETE'),
  uidCase('GET', '/deliveries'),
  uidCase('GET', '/deliveries?limit=5'),
  // A request the route would refuse (a body where none is taken, an unknown query parameter) is
  // still the unknown webhook's 404 first, or its 400 would tell an unknown UID from a foreign one.
  uidCase('POST', '/enable', { unexpected: true }),
  uidCase('POST', '/disable', { unexpected: true }),
  uidCase('DELETE', '', { unexpected: true }),
  uidCase('GET', '/deliveries?unexpected=1'),
  uidCase('GET', '/deliveries?limit=0'),
  uidCase('GET', `/deliveries/${encodeURIComponent(deliveryId)}`),
  // runtime/routes/replay-retry.ts: nothing is replayed, and the answer is the unknown webhook's.
  uidCase('POST', `/deliveries/${encodeURIComponent(deliveryId)}/replay`),
  uidCase('POST', `/deliveries/${encodeURIComponent(deliveryId)}/replay`, { automation: 'review' }),
  // runtime/routes/automations.ts
  factoryCase('GET', (f) => `/api/v1/automations?factory=${f}`),
  factoryCase('GET', (f) => `/api/v1/automations/${f}/review`),
  factoryCase('POST', (f) => `/api/v1/automations/${f}/review/test`, { delivery_id: deliveryId }),
  // runtime/routes/schedules.ts: a foreign factory's schedules are not listed, and one is a 404 like an unknown id.
  factoryCase('GET', () => '/api/v1/agent/schedules'),
  factoryCase('GET', (f) => `/api/v1/agent/schedules/${encodeURIComponent(SCHEDULE(f))}`),
  factoryCase('POST', (f) => `/api/v1/agent/schedules/${encodeURIComponent(SCHEDULE(f))}/pause`),
  factoryCase('POST', (f) => `/api/v1/agent/schedules/${encodeURIComponent(SCHEDULE(f))}/resume`),
  // Test filter on the key's own automation, naming the foreign webhook or its delivery.
  {
    method: 'POST',
    foreign: { path: `/api/v1/automations/${OWN}/mine/test`, body: { delivery_id: deliveryId, webhook_uid: GITHUB_UID }, id: GITHUB_UID },
    unknown: { path: `/api/v1/automations/${OWN}/mine/test`, body: { delivery_id: deliveryId, webhook_uid: UNKNOWN_UID }, id: UNKNOWN_UID },
  },
  {
    method: 'POST',
    foreign: { path: `/api/v1/automations/${OWN}/mine/test`, body: { delivery_id: deliveryId }, id: deliveryId },
    unknown: { path: `/api/v1/automations/${OWN}/mine/test`, body: { delivery_id: 'no-such-delivery' }, id: 'no-such-delivery' },
  },
];

async function call(method: string, path: string, body: unknown) {
  const res = await rt.fetch(path, { method, key, json: body });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', text };
}

/** The body with every form of `id` the caller sent replaced by a placeholder. */
const normalise = (text: string, id: string) => text.split(id).join('<ID>').split(encodeURIComponent(id)).join('<ID>');

test('a foreign webhook or factory answers exactly like an unknown one on every manage route', async () => {
  for (const c of CASES()) {
    const what = `${c.method} ${c.foreign.path}`;
    const foreign = await call(c.method, c.foreign.path, c.foreign.body);
    const unknown = await call(c.method, c.unknown.path, c.unknown.body);
    assert.equal(foreign.status, unknown.status, `${what}: ${foreign.text} vs ${unknown.text}`);
    assert.ok(foreign.status === 404 || foreign.status === 200, `${what}: ${foreign.status} ${foreign.text}`);
    assert.equal(foreign.type, unknown.type, what);
    assert.equal(normalise(foreign.text, c.foreign.id), normalise(unknown.text, c.unknown.id), what);
    const shown = normalise(foreign.text, c.foreign.id);
    assert.ok(!shown.includes(FACTORY) && !shown.includes(GITHUB_UID), `${what} names the foreign factory or webhook: ${foreign.text}`);
    if (foreign.status === 404) assert.equal((JSON.parse(foreign.text) as { code: string }).code, 'resource_not_found', what);
  }
});

test('lists of a limited key leave the foreign factory out, and the refused calls changed nothing', async () => {
  const hooks = (await (await rt.fetch('/api/v1/webhooks?include_deleted=true', { key })).json()) as { webhooks: { uid: string; factory: string }[] };
  assert.deepEqual(hooks.webhooks.map((w) => w.uid), [OTHER_UID]);
  const autos = (await (await rt.fetch('/api/v1/automations', { key })).json()) as { automations: { factory: string; name: string }[] };
  assert.deepEqual(autos.automations.map((a) => `${a.factory}/${a.name}`), [`${OWN}/mine`]);

  // The foreign schedule exists (the admin key lists it), is not in the limited key's list, and
  // the refused pause left it running.
  const everyone = (await (await rt.fetch('/api/v1/agent/schedules')).json()) as { schedules: { id: string; enabled: boolean }[] };
  assert.deepEqual(everyone.schedules.find((x) => x.id === SCHEDULE(FACTORY))?.enabled, true, JSON.stringify(everyone.schedules));
  const limited = (await (await rt.fetch('/api/v1/agent/schedules', { key })).json()) as { schedules: { id: string }[] };
  assert.deepEqual(limited.schedules, []);

  // The foreign webhook is still enabled, undeleted, with its secret: deliveries still go in.
  const shown = (await (await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}`)).json()) as { enabled: boolean; deleted_at: string | null; factory: string };
  assert.equal(shown.enabled, true);
  assert.equal(shown.deleted_at, null);
  assert.equal((await deliverGithub(rt, PR_OPENED)).res.status, 202);
  // No webhook was created in the foreign factory or in the unknown one; no unknown factory appeared.
  const all = (await (await rt.fetch('/api/v1/webhooks?include_deleted=true')).json()) as { webhooks: { name: string; factory: string }[] };
  assert.ok(!all.webhooks.some((w) => w.name === 'sneaky'), JSON.stringify(all.webhooks));
  assert.ok(!all.webhooks.some((w) => w.factory === UNKNOWN_FACTORY));
});

test('the same key works on its own factory (the 404s above are not a broken key)', async () => {
  assert.equal((await rt.fetch(`/api/v1/webhooks/${OTHER_UID}`, { key })).status, 200);
  assert.equal((await rt.fetch(`/api/v1/webhooks/${OTHER_UID}/deliveries`, { key })).status, 200);
  assert.equal((await rt.fetch(`/api/v1/automations/${OWN}/mine`, { key })).status, 200);
  const plan = await rt.fetch(`/api/v1/factories/${OWN}/plan`, { method: 'POST', key, json: { snapshot: {} } });
  assert.equal(plan.status, 400, 'an invalid snapshot of its own factory is judged, not hidden');
});

/** `factory ...args` with the limited key (in-process, test/helpers/cli.ts). */
function cli(args: string[]): Promise<CliResult> {
  return runCliInProcess(args, { env: terminalEnv({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: key }) });
}

test('through the CLI: the same one-line "not found" for a foreign webhook as for an unknown one', async () => {
  for (const args of [['webhook', 'show'], ['webhook', 'disable'], ['webhook', 'rotate'], ['delivery', 'list']]) {
    const foreign = await cli([...args, GITHUB_UID]);
    const unknown = await cli([...args, UNKNOWN_UID]);
    const what = args.join(' ');
    assert.equal(foreign.code, 1, `${what}: ${foreign.stderr}`);
    assert.equal(unknown.code, 1, `${what}: ${unknown.stderr}`);
    assert.equal(foreign.stderr.split(GITHUB_UID).join('<ID>'), unknown.stderr.split(UNKNOWN_UID).join('<ID>'), what);
    assert.ok(!foreign.stderr.includes(FACTORY), `${what}: ${foreign.stderr}`);
    assert.equal(foreign.stdout, '');
  }
  const test = await cli(['automation', 'test', 'review', '--factory', FACTORY, '--delivery', deliveryId]);
  const none = await cli(['automation', 'test', 'review', '--factory', UNKNOWN_FACTORY, '--delivery', deliveryId]);
  assert.equal(test.code, 1, test.stderr);
  assert.equal(test.stderr.split(FACTORY).join('<F>'), none.stderr.split(UNKNOWN_FACTORY).join('<F>'));
});

test('every manage route of the runtime has a case here', async () => {
  const router = new Router();
  for (const register of ROUTES) register(router, rt.app.context.deps);
  const cases = CASES();
  const missing: string[] = [];
  for (const layer of router.stack) {
    if (typeof layer.path !== 'string') continue;
    for (const method of layer.methods) {
      if (method === 'HEAD') continue;
      const manage = ROUTE_SCOPES.some((r) => r.scope === 'manage' && r.method === method && layer.match(r.path));
      if (!manage) continue;
      if (!cases.some((c) => c.method === method && layer.match(c.foreign.path.split('?')[0]))) missing.push(`${method} ${layer.path}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('a plan of its own factory that collides with the foreign one names neither that factory nor its webhook', async () => {
  // The key's own factory, pinning the foreign webhook's UID and defining the foreign environment's id.
  const files = factoryFiles({ mine: { uids: [GITHUB_UID] } }, { pinned: GITHUB_UID }).map((f) => ({
    path: f.path,
    text: f.text.replace(`name: ${FACTORY}`, `name: ${OWN}`).replace('secretName: github-webhook', 'secretName: elsewhere-github'),
  }));
  const { snapshot, diagnostics } = compile(files);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  for (const [who, asKey] of [['the limited key', key], ['the admin key', undefined]] as const) {
    const res = await rt.fetch(`/api/v1/factories/${OWN}/plan`, { method: 'POST', key: asKey, json: { snapshot } });
    const body = (await res.json()) as { errors: { code: string; message: string }[] };
    assert.equal(res.status, 409, `${who}: ${JSON.stringify(body)}`);
    assert.deepEqual(body.errors.map((e) => e.code).sort(), ['environment.owned', 'webhook.uid_taken'], who);
    const messages = body.errors.map((e) => e.message).join('\n');
    assert.match(messages, new RegExp(`uid ${GITHUB_UID} belongs to`), who);
    assert.match(messages, /environment 'agent' belongs to/, who);
    if (asKey === undefined) {
      assert.match(messages, new RegExp(`webhook 'github' of factory '${FACTORY}'`), 'the admin sees whose they are');
    } else {
      assert.ok(!messages.includes(FACTORY) && !messages.includes("'github'"), messages);
      assert.match(messages, /a webhook of another factory/);
      assert.match(messages, /belongs to another factory/);
    }
  }
});
