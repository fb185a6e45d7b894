import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sign } from '@octokit/webhooks-methods';
import { compile } from '../../../cli/compiler/compile.ts';
import { snapshotDigest } from '../../../runtime/definitions/checks.ts';
import type { Snapshot } from '../../../core/snapshot.ts';
import type { TestRuntime } from '../helpers.ts';
import { startTestRuntime } from '../helpers.ts';
import { deliver } from '../ingress/helpers.ts';
import { AGENTS, envYaml, waitForRun } from './runs-helpers.ts';

/**
 * Secrets with an owner (docs/runtime.md#team-secrets, #secrets-and-webhooks) through the real
 * HTTP API: which factories may bind a secret, what plan and apply refuse, and that a `manage` key
 * limited to one factory can never write a value another factory relies on.
 */

let rt: TestRuntime;
before(async () => {
  rt = await startTestRuntime();
});
after(() => rt.stop());

type Json = Record<string, any>;
const call = async (method: string, path: string, json?: unknown, key?: string) => {
  const res = await rt.fetch(path, { method, json, key });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Json };
};

async function newKey(name: string, scopes: string[], factories?: string[]): Promise<string> {
  const res = await call('POST', '/api/v1/keys', { name, kind: 'agent', scopes, ...(factories ? { factories } : {}) });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.key as string;
}

/** A snapshot of `files` (path → text) for factory `name`, compiled like `factory build`. */
function snapshotOf(name: string, files: Record<string, string>): unknown {
  const { snapshot, diagnostics } = compile([{ path: 'factory.yaml', text: `name: ${name}\n` }, ...Object.entries(files).map(([path, text]) => ({ path, text }))]);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  return snapshot;
}

const githubHeaders = async (secret: string, body: string) => ({ 'X-Hub-Signature-256': await sign(secret, body), 'X-GitHub-Event': 'ping' });
const version = (name: string) => rt.store.secrets.get(name)?.current_version;

describe('the secrets API: which factories may use a secret', () => {
  it('create with factories, list and get show them; grant, revoke, limit and team-wide again', async () => {
    const created = await call('POST', '/api/v1/secrets', { name: 'api-pay', value: 'v', factories: ['shop', 'pay', 'shop'] });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body.factories, ['pay', 'shop']);
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'api-team', pending: true })).body.factories, null);
    assert.deepEqual((await call('POST', '/api/v1/secrets', { name: 'api-pending', pending: true, factories: ['ops'] })).body.factories, ['ops']);

    const list = await call('GET', '/api/v1/secrets');
    const rows = (list.body.secrets as Json[]).filter((s) => s.name.startsWith('api-')).map((s) => [s.name, s.factories]);
    assert.deepEqual(rows, [['api-pay', ['pay', 'shop']], ['api-pending', ['ops']], ['api-team', null]]);
    assert.deepEqual((await call('GET', '/api/v1/secrets/api-pay')).body.factories, ['pay', 'shop']);

    assert.deepEqual((await call('POST', '/api/v1/secrets/api-pay/grant', { factories: ['blog'] })).body.factories, ['blog', 'pay', 'shop']);
    const revoked = await call('POST', '/api/v1/secrets/api-pay/revoke', { factories: ['shop', 'pay'] });
    assert.deepEqual([revoked.status, revoked.body.factories, revoked.body.current_version], [200, ['blog'], 1]);
    const last = await call('POST', '/api/v1/secrets/api-pay/revoke', { factories: ['blog'] });
    assert.deepEqual([last.status, last.body.code], [409, 'conflict']);
    assert.match(last.body.detail, /no factory that may use the secret "api-pay"; grant another factory first, or delete the secret/);

    const teamGrant = await call('POST', '/api/v1/secrets/api-team/grant', { factories: ['shop'] });
    assert.deepEqual([teamGrant.status, teamGrant.body.code], [409, 'conflict']);
    assert.match(teamGrant.body.detail, /team-wide .*factory secret limit api-team --factory NAME/);
    assert.deepEqual((await call('PUT', '/api/v1/secrets/api-team/factories', { factories: ['ops'] })).body.factories, ['ops']);
    assert.equal((await call('PUT', '/api/v1/secrets/api-team/factories', { factories: null })).body.factories, null);
  });

  it('refuses bad factory lists with 400 problem+json pointing at the item; unknown secrets are 404; admin only', async () => {
    for (const [method, path, body, pointer] of [
      ['POST', '/api/v1/secrets', { name: 'bad-1', value: 'v', factories: [] }, '/factories'],
      ['POST', '/api/v1/secrets', { name: 'bad-2', value: 'v', factories: ['shop', 'Not A Name'] }, '/factories/1'],
      ['POST', '/api/v1/secrets', { name: 'bad-3', value: 'v', factories: 'shop' }, '/factories'],
      ['POST', '/api/v1/secrets/api-pay/grant', { factories: null }, '/factories'],
      ['POST', '/api/v1/secrets/api-pay/grant', {}, '/factories'],
      ['POST', '/api/v1/secrets/api-pay/revoke', { factories: ['-x'] }, '/factories/0'],
      ['POST', '/api/v1/secrets/api-pay/grant', { factories: ['ok'], extra: 1 }, '/extra'],
      ['PUT', '/api/v1/secrets/api-pay/factories', { factories: [42] }, '/factories/0'],
    ] as const) {
      const res = await call(method, path, body);
      assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)}`);
      assert.equal(res.body.code, 'invalid_request');
      assert.equal(res.body.errors[0].pointer, pointer, JSON.stringify(res.body));
    }
    for (const n of ['bad-1', 'bad-2', 'bad-3']) assert.equal(version(n), undefined, 'nothing created');
    assert.deepEqual(rt.store.secrets.get('api-pay')!.factories, ['blog'], 'nothing changed');
    assert.equal((await call('POST', '/api/v1/secrets/missing/grant', { factories: ['shop'] })).status, 404);
    assert.equal((await call('PUT', '/api/v1/secrets/missing/factories', { factories: null })).status, 404);

    const manage = await newKey('unlimited-manager', ['manage']);
    for (const [method, path, body] of [
      ['GET', '/api/v1/secrets', undefined],
      ['POST', '/api/v1/secrets/api-pay/grant', { factories: ['evil'] }],
      ['POST', '/api/v1/secrets/api-pay/revoke', { factories: ['blog'] }],
      ['PUT', '/api/v1/secrets/api-pay/factories', { factories: null }],
    ] as const) {
      const res = await call(method, path, body, manage);
      assert.deepEqual([res.status, res.body.code], [403, 'not_authorized'], `${method} ${path}`);
    }
    assert.deepEqual(rt.store.secrets.get('api-pay')!.factories, ['blog']);
  });
});

describe('plan and apply', () => {
  const shopFiles = {
    'webhooks/hook.yaml': 'secretName: shop-only\n',
    'environments/agent.yaml': 'agent:\n  command: [echo, hi]\nenv:\n  TOKEN:\n    secret: shop-only\n',
  };
  const evilFiles = {
    'webhooks/hook.yaml': 'secretName: shop-only\n',
    'environments/steal.yaml': 'agent:\n  command: [echo, hi]\nenv:\n  T:\n    secret: shop-only\n',
    'automations/borrow.md': '---\ntriggers:\n  - provider: webhook\n    event: received\n    filter: {webhook_ids: [wh_borrowborrowborrowborrowbo]}\nenvironment: agent\n---\nUse the shop environment.\n',
  };

  it('refuse, naming the file and the secret, every binding of a secret the factory may not use, and another factory\'s environment', async () => {
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'shop-only', value: 's'.repeat(40), factories: ['shop'] })).status, 201);
    const applied = await call('POST', '/api/v1/factories/shop/apply', { snapshot: snapshotOf('shop', shopFiles) });
    assert.equal(applied.status, 200, JSON.stringify(applied.body));

    const evilKey = await newKey('evil-manager', ['manage'], ['evil']);
    // The compiler refuses an automation whose environment the repo does not define, so the snapshot
    // is built with shop's environment beside it and sent without it: the runtime's own check is the
    // one under test (a snapshot may come from elsewhere).
    const snapshot = snapshotOf('evil', { ...evilFiles, 'environments/agent.yaml': shopFiles['environments/agent.yaml'] }) as Snapshot;
    snapshot.environments = snapshot.environments.filter((e) => e.name !== 'agent');
    delete (snapshot.sources as Record<string, unknown>)['environments/agent.yaml'];
    snapshot.digest = snapshotDigest(snapshot);
    for (const key of [undefined, evilKey]) {
      for (const verb of ['plan', 'apply']) {
        const res = await call('POST', `/api/v1/factories/evil/${verb}`, { snapshot }, key);
        assert.deepEqual([res.status, res.body.code], [409, 'conflict'], `${verb}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(res.body.errors.map((e: Json) => [e.file, e.pointer, e.code]), [
          ['webhooks/hook.yaml', '/secretName', 'secret.not_allowed'],
          ['environments/steal.yaml', '/env/T/secret', 'secret.not_allowed'],
          ['automations/borrow.md', '/environment', 'environment.not_owned'],
        ]);
        assert.match(res.body.errors[0].message, /team secret 'shop-only' may not be used by factory 'evil'/);
        // A key limited to 'evil' is not told whose the environment is (docs/runtime.md#factory-limited-keys).
        assert.match(res.body.errors[2].message, key === undefined ? /environment 'agent' belongs to factory 'shop'/ : /environment 'agent' belongs to another factory;/);
      }
    }
    assert.equal(rt.store.defs.getFactory('evil'), undefined, 'nothing was applied');
  });

  it('a granted factory may bind it; revoking it is refused while it does, and allowed once it stops', async () => {
    assert.equal((await call('POST', '/api/v1/secrets/shop-only/grant', { factories: ['evil'] })).status, 200);
    const { 'automations/borrow.md': _borrow, ...own } = evilFiles;
    const applied = await call('POST', '/api/v1/factories/evil/apply', { snapshot: snapshotOf('evil', own) });
    assert.equal(applied.status, 200, JSON.stringify(applied.body));

    const refused = await call('POST', '/api/v1/secrets/shop-only/revoke', { factories: ['evil'] });
    assert.deepEqual([refused.status, refused.body.code], [409, 'conflict']);
    assert.match(refused.body.detail, /still used by environment steal, webhook evil\/hook; .* before taking "evil" off its list/);
    const limit = await call('PUT', '/api/v1/secrets/shop-only/factories', { factories: ['shop'] });
    assert.equal(limit.status, 409);
    assert.deepEqual(rt.store.secrets.get('shop-only')!.factories, ['evil', 'shop']);

    // The list is one of the facts a plan relies on: a plan made before it changed is stale.
    const snapshot = snapshotOf('evil', own);
    const plan = await call('POST', '/api/v1/factories/evil/plan', { snapshot });
    assert.equal((await call('POST', '/api/v1/secrets/shop-only/grant', { factories: ['blog'] })).status, 200);
    const stale = await call('POST', '/api/v1/factories/evil/apply', { snapshot, base_revision: plan.body.base_revision });
    assert.deepEqual([stale.status, stale.body.errors?.[0]?.code], [409, 'plan.stale']);

    assert.equal((await call('POST', '/api/v1/factories/evil/apply', { snapshot: snapshotOf('evil', {}) })).status, 200);
    assert.deepEqual((await call('POST', '/api/v1/secrets/shop-only/revoke', { factories: ['evil'] })).body.factories, ['blog', 'shop']);
  });
});

describe('a factory-limited manage key and secret values', () => {
  let attacker: string;
  let victimHook: { uid: string; url: string };
  const VICTIM = 'victim-signing-value';

  before(async () => {
    attacker = await newKey('attacker', ['manage'], ['intruder']);
    // The victim: factory shop's webhook verifies with a team-wide secret, and another with its own.
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'shared-signing', value: VICTIM })).status, 201);
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'shop-signing', value: VICTIM, factories: ['shop-api'] })).status, 201);
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'shared-pending', pending: true })).status, 201);
    const created = await call('POST', '/api/v1/factories/shop-api/webhooks', { name: 'gh', auth_mode: 'signature', signature_scheme: 'github', secret_name: 'shared-signing' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    victimHook = created.body.webhook;
  });

  /** The victim's webhook still takes its own signature and refuses the attacker's. */
  async function victimUnharmed() {
    const body = '{"zen":"still mine"}';
    assert.equal((await deliver(victimHook.url, body, await githubHeaders(VICTIM, body))).status, 202);
    assert.equal((await deliver(victimHook.url, body, await githubHeaders('attacker-value', body))).status, 401);
    assert.equal(version('shared-signing'), 1);
    assert.equal(version('shop-signing'), 1);
    assert.equal(version('shared-pending'), 0);
  }

  it('cannot overwrite another factory\'s secret through webhook create (shared: 403; not its own to bind: 409)', async () => {
    const attempts: [Json, number, string][] = [
      [{ name: 'a1', auth_mode: 'signature', signature_scheme: 'github', secret_name: 'shared-signing', secret: 'attacker-value' }, 403, 'not_authorized'],
      [{ name: 'a2', auth_mode: 'signature', signature_scheme: 'github', secret_name: 'shop-signing', secret: 'attacker-value' }, 409, 'conflict'],
      [{ name: 'a3', auth_mode: 'signature', signature_scheme: 'github', secret_name: 'shop-signing' }, 409, 'conflict'],
      // token mode on a pending shared secret would generate a value into it
      [{ name: 'a4', secret_name: 'shared-pending' }, 403, 'not_authorized'],
      [{ name: 'a5', auth_mode: 'signature', signature_scheme: 'standard-webhooks', secret_name: 'shared-pending' }, 403, 'not_authorized'],
    ];
    for (const [body, status, code] of attempts) {
      const res = await call('POST', '/api/v1/factories/intruder/webhooks', body, attacker);
      assert.deepEqual([res.status, res.body.code], [status, code], `${body.name}: ${JSON.stringify(res.body)}`);
    }
    const res = await call('POST', '/api/v1/factories/intruder/webhooks', attempts[0][0], attacker);
    assert.match(res.body.detail, /may not change the value of the team secret "shared-signing", which is not factory "intruder"'s alone; an admin can, with `factory secret update shared-signing`/);
    assert.equal((await call('GET', '/api/v1/webhooks?factory=intruder')).body.webhooks.length, 0, 'no webhook was created');
    await victimUnharmed();
  });

  it('may bind a team-wide secret as it is, but never rotate it or set a provider secret into it', async () => {
    const bound = await call('POST', '/api/v1/factories/intruder/webhooks', { name: 'binder', auth_mode: 'signature', signature_scheme: 'github', secret_name: 'shared-signing' }, attacker);
    assert.equal(bound.status, 201, JSON.stringify(bound.body));
    assert.equal(bound.body.secret, undefined, 'nothing generated');
    const uid = bound.body.webhook.uid as string;
    for (const [path, body] of [[`/api/v1/webhooks/${uid}/rotate`, { secret: 'attacker-value' }], [`/api/v1/webhooks/${uid}/secret`, { secret: 'attacker-value' }]] as const) {
      const res = await call('POST', path, body, attacker);
      assert.deepEqual([res.status, res.body.code], [403, 'not_authorized'], path);
    }
    const token = await call('POST', '/api/v1/factories/intruder/webhooks', { name: 'tok', secret_name: 'shared-signing' }, attacker);
    assert.equal(token.status, 201, 'a token webhook binds an existing value as it is');
    const rotate = await call('POST', `/api/v1/webhooks/${token.body.webhook.uid}/rotate`, undefined, attacker);
    assert.deepEqual([rotate.status, rotate.body.code], [403, 'not_authorized']);
    assert.equal(rotate.body.secret, undefined);
    await victimUnharmed();
  });

  it('may create, rotate and set webhooks whose secret is new and so its own; loses that once the secret is shared', async () => {
    const own = await call('POST', '/api/v1/factories/intruder/webhooks', { name: 'own' }, attacker);
    assert.equal(own.status, 201);
    assert.deepEqual(rt.store.secrets.get('intruder-own-secret')!.factories, ['intruder'], 'a new secret belongs to its factory alone');
    const rotated = await call('POST', `/api/v1/webhooks/${own.body.webhook.uid}/rotate`, undefined, attacker);
    assert.deepEqual([rotated.status, rotated.body.webhook.secret_version], [200, 2]);
    assert.equal((await deliver(own.body.webhook.url, '{"a":1}', { Authorization: `Bearer ${own.body.secret}` })).status, 401);
    assert.equal((await deliver(own.body.webhook.url, '{"a":1}', { Authorization: `Bearer ${rotated.body.secret}` })).status, 202);

    const given = await call('POST', '/api/v1/factories/intruder/webhooks', { name: 'given', auth_mode: 'signature', signature_scheme: 'github', secret_name: 'intruder-given', secret: 'intruder-value' }, attacker);
    assert.equal(given.status, 201);
    assert.deepEqual(rt.store.secrets.get('intruder-given')!.factories, ['intruder']);

    const twoStep = await call('POST', '/api/v1/factories/intruder/webhooks', { name: 'gh', auth_mode: 'signature', signature_scheme: 'github' }, attacker);
    assert.deepEqual([twoStep.status, twoStep.body.webhook.enabled], [201, false]);
    assert.deepEqual(rt.store.secrets.get('intruder-gh-secret')!.factories, ['intruder']);
    const set = await call('POST', `/api/v1/webhooks/${twoStep.body.webhook.uid}/secret`, { secret: 'from-github' }, attacker);
    assert.deepEqual([set.status, set.body.webhook.enabled], [200, true]);

    // Once an admin shares it, the value is no longer the factory's alone.
    assert.equal((await call('POST', '/api/v1/secrets/intruder-own-secret/grant', { factories: ['blog'] })).status, 200);
    const shared = await call('POST', `/api/v1/webhooks/${own.body.webhook.uid}/rotate`, undefined, attacker);
    assert.deepEqual([shared.status, shared.body.code], [403, 'not_authorized']);
    assert.equal(version('intruder-own-secret'), 2);

    // A secret name owned by another factory cannot be taken by creating a webhook with it.
    const squat = await call('POST', '/api/v1/factories/shop-api/webhooks', { name: 'given', secret_name: 'intruder-given' });
    assert.deepEqual([squat.status, squat.body.code], [409, 'conflict']);
    assert.match(squat.body.detail, /"intruder-given" may not be used by factory "shop-api"/);
  });

  it('admin keys and unlimited manage keys write shared secrets as before', async () => {
    const manager = await newKey('unlimited', ['manage']);
    const hook = await call('POST', '/api/v1/factories/intruder/webhooks', { name: 'by-admin', secret_name: 'shared-token' });
    assert.equal(hook.status, 201);
    assert.deepEqual(rt.store.secrets.get('shared-token')!.factories, ['intruder']);
    assert.equal((await call('POST', '/api/v1/secrets/shared-token/grant', { factories: ['blog'] })).status, 200);
    for (const key of [manager, undefined]) {
      const res = await call('POST', `/api/v1/webhooks/${hook.body.webhook.uid}/rotate`, undefined, key);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    assert.equal(version('shared-token'), 3);
  });
});

describe('runs', () => {
  it('a queued run whose environment passed to another factory fails instead of running with it', async () => {
    const executor = rt.services.executor as { pause(): void; resume(): void };
    executor.pause();
    const agent = (marker: string) => envYaml({ command: [process.execPath, `${AGENTS}/scripted-agent.mjs`], env: { MARKER: marker } });
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'runs-token', value: 'runs-token-value', factories: ['runs-a'] })).status, 201);
    const a = await call('POST', '/api/v1/factories/runs-a/apply', {
      snapshot: snapshotOf('runs-a', {
        'webhooks/hook.yaml': 'secretName: runs-token\nuid: wh_runsrunsrunsrunsrunsrunsru\n',
        'environments/moving.yaml': agent('a'),
        'automations/go.md': '---\ntriggers:\n  - provider: webhook\n    event: received\n    filter: {webhook_ids: [wh_runsrunsrunsrunsrunsrunsru]}\nenvironment: moving\n---\nGo.\n',
      }),
    });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const delivered = await deliver(`${rt.url}/webhooks/w/wh_runsrunsrunsrunsrunsrunsru`, '{"go":1}', { Authorization: 'Bearer runs-token-value' });
    assert.equal(delivered.status, 202);
    const runs = await call('GET', '/api/v1/agent/runs?factory=runs-a');
    assert.equal(runs.body.runs.length, 1);
    const runId = runs.body.runs[0].run_id as string;

    // Factory runs-a drops the automation and the environment; runs-b takes the id.
    assert.equal((await call('POST', '/api/v1/factories/runs-a/apply', { snapshot: snapshotOf('runs-a', { 'webhooks/hook.yaml': 'secretName: runs-token\nuid: wh_runsrunsrunsrunsrunsrunsru\n' }) })).status, 200);
    assert.equal((await call('POST', '/api/v1/factories/runs-b/apply', { snapshot: snapshotOf('runs-b', { 'environments/moving.yaml': agent('b') }) })).status, 200);
    executor.resume();
    const run = await waitForRun(rt, runId);
    assert.equal(run.state, 'FAILED');
    assert.match(run.status_message, /the environment "moving" now belongs to another factory, not to "runs-a"/);
    const transcript = await rt.fetch(`/api/v1/agent/runs/${runId}/transcript`);
    assert.equal(transcript.status, 200);
    assert.ok(!(await transcript.text()).includes('scripted-agent'), 'the other factory\'s agent did not run');
  });
});
