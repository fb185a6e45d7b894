import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNotAtRest, startTestRuntime } from '../helpers.ts';

const VALUE = 'leak-canary-3f9b1c7e-value';
const VALUE2 = 'leak-canary-second-8d21';

test('secrets API: create, pending, update, list, get, delete; never a value in any response, log or file', async () => {
  const rt = await startTestRuntime();
  const responses: string[] = [];
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await rt.fetch(path, { method, json });
    const text = await res.text();
    responses.push(text);
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined, headers: res.headers };
  };
  try {
    const created = await call('POST', '/api/v1/secrets', { name: 'github-signing', value: VALUE });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('location'), '/api/v1/secrets/github-signing');
    assert.deepEqual([created.body?.current_version, created.body?.has_value], [1, true]);

    const pending = await call('POST', '/api/v1/secrets', { name: 'paddle', pending: true });
    assert.deepEqual([pending.status, pending.body?.has_value], [201, false]);

    const updated = await call('PUT', '/api/v1/secrets/github-signing', { value: VALUE2 });
    assert.deepEqual([updated.status, updated.body?.current_version], [200, 2]);

    const list = await call('GET', '/api/v1/secrets');
    assert.deepEqual((list.body?.secrets as { name: string }[]).map((s) => s.name), ['github-signing', 'paddle']);
    assert.equal((await call('GET', '/api/v1/secrets/paddle')).body?.current_version, 0);
    assert.equal(rt.store.secrets.reveal('github-signing'), VALUE2);

    // Validation failures: 400 problem+json with errors[{pointer, message}].
    for (const [body, pointer] of [
      [{ name: 'bad name', value: 'x' }, '/name'],
      [{ name: 'ok' }, '/value'],
      [{ name: 'ok', value: 'x', pending: true }, '/value'],
      [{ name: 'ok', value: 'x', extra: 1 }, '/extra'],
      [{ name: 'ok', value: 42 }, '/value'],
    ] as const) {
      const bad = await call('POST', '/api/v1/secrets', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body?.code, 'invalid_request');
      assert.equal((bad.body?.errors as { pointer: string }[])[0].pointer, pointer);
    }
    assert.equal((await call('POST', '/api/v1/secrets', { name: 'paddle', value: 'x' })).status, 409);
    assert.equal((await call('PUT', '/api/v1/secrets/missing', { value: 'x' })).status, 404);
    assert.equal((await call('DELETE', '/api/v1/secrets/paddle')).status, 204);
    assert.equal((await call('GET', '/api/v1/secrets/paddle')).status, 404);

    const bad = await rt.fetch('/api/v1/secrets', { method: 'POST', body: '{"name": "x", "value": ' });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { code: string }).code, 'invalid_json');

    for (const text of responses) assert.ok(!text.includes(VALUE) && !text.includes(VALUE2), text);
    assert.ok(!rt.logs.text.includes(VALUE) && !rt.logs.text.includes(VALUE2), 'no value in the logs');
    assertNotAtRest(rt, [VALUE, VALUE2]);
  } finally {
    await rt.stop();
  }
});

test('keys API: create shows the key once; list never does; revoke stops it at once', async () => {
  const rt = await startTestRuntime();
  try {
    const res = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'ci', kind: 'agent', scopes: ['runs'] } });
    assert.equal(res.status, 201);
    const created = (await res.json()) as { id: string; key: string; scopes: string[]; factories: null };
    assert.match(created.key, /^fk_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual([created.scopes, created.factories], [['runs'], null]);

    const list = await (await rt.fetch('/api/v1/keys')).text();
    assert.ok(!list.includes(created.key));
    assert.ok(!list.includes('hash'));
    assert.ok(!rt.logs.text.includes(created.key));

    // The new key works for what it may do (a runs key may not list keys: 403, not 401).
    assert.equal((await rt.fetch('/api/v1/keys', { key: created.key })).status, 403);
    const revoke = await rt.fetch(`/api/v1/keys/${created.id}/revoke`, { method: 'POST' });
    assert.equal(revoke.status, 200);
    assert.ok(((await revoke.json()) as { revoked_at: string | null }).revoked_at);
    assert.equal((await rt.fetch('/api/v1/keys', { key: created.key })).status, 401);

    const bad = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'x', kind: 'robot', scopes: ['root'] } });
    assert.equal(bad.status, 400);
    const problem = (await bad.json()) as { errors: { pointer: string }[] };
    assert.deepEqual(problem.errors.map((e) => e.pointer), ['/kind', '/scopes']);
    assert.equal((await rt.fetch('/api/v1/keys/key_nope/revoke', { method: 'POST' })).status, 404);
  } finally {
    await rt.stop();
  }
});
