import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCliInProcess, terminalEnv } from '../../helpers/cli.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';

/**
 * POST /api/v1/keys takes any JSON: every shape that is not a valid key is a 400 problem naming
 * the field (never a 500, never a key broader than asked), through a real server.
 */

let rt: TestRuntime;
before(async () => {
  rt = await startTestRuntime();
});
after(() => rt.stop());

const good = { name: 'alice', kind: 'personal', scopes: ['manage'] };

async function create(body: unknown) {
  const res = await rt.fetch('/api/v1/keys', { method: 'POST', json: body });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as Record<string, any> };
}

test('every bad shape of factories, name, kind and scopes is a 400 with its pointer, and creates nothing', async () => {
  const before = rt.store.keys.list().length;
  const cases: [string, unknown, string][] = [
    // factories: the shapes an attacker tried, and more.
    ['factories {}', { ...good, factories: {} }, '/factories'],
    ['factories "example"', { ...good, factories: 'example' }, '/factories'],
    ['factories {"length":3}', { ...good, factories: { length: 3 } }, '/factories'],
    ['factories []', { ...good, factories: [] }, '/factories'],
    ['factories 3', { ...good, factories: 3 }, '/factories'],
    ['factories true', { ...good, factories: true }, '/factories'],
    ['factories [null]', { ...good, factories: [null] }, '/factories/0'],
    ['factories [1]', { ...good, factories: [1] }, '/factories/0'],
    ['factories [["a"]]', { ...good, factories: [['a']] }, '/factories/0'],
    ['factories [{}]', { ...good, factories: [{}] }, '/factories/0'],
    ['factories ["ok", "Not A Name"]', { ...good, factories: ['ok', 'Not A Name'] }, '/factories/1'],
    ['factories [""]', { ...good, factories: [''] }, '/factories/0'],
    ['factories too many', { ...good, factories: Array.from({ length: 101 }, (_, i) => `f${i}`) }, '/factories'],
    ['factories with admin', { ...good, scopes: ['admin'], factories: ['a'] }, '/factories'],
    ['factories with admin and manage', { ...good, scopes: ['admin', 'manage'], factories: ['a'] }, '/factories'],
    // name
    ['name missing', { kind: 'agent', scopes: ['runs'] }, '/name'],
    ['name null', { ...good, name: null }, '/name'],
    ['name 3', { ...good, name: 3 }, '/name'],
    ['name []', { ...good, name: [] }, '/name'],
    ['name {}', { ...good, name: {} }, '/name'],
    ['name ""', { ...good, name: '' }, '/name'],
    ['name with a newline', { ...good, name: 'a\nb' }, '/name'],
    ['name too long', { ...good, name: 'x'.repeat(129) }, '/name'],
    // kind
    ['kind missing', { name: 'x', scopes: ['runs'] }, '/kind'],
    ['kind null', { ...good, kind: null }, '/kind'],
    ['kind 1', { ...good, kind: 1 }, '/kind'],
    ['kind ["agent"]', { ...good, kind: ['agent'] }, '/kind'],
    ['kind "robot"', { ...good, kind: 'robot' }, '/kind'],
    // scopes
    ['scopes null', { ...good, scopes: null }, '/scopes'],
    ['scopes "admin"', { ...good, scopes: 'admin' }, '/scopes'],
    ['scopes {"length":3}', { ...good, scopes: { length: 3 } }, '/scopes'],
    ['scopes {}', { ...good, scopes: {} }, '/scopes'],
    ['scopes []', { ...good, scopes: [] }, '/scopes'],
    ['scopes [null]', { ...good, scopes: [null] }, '/scopes'],
    ['scopes [["admin"]]', { ...good, scopes: [['admin']] }, '/scopes'],
    ['scopes [1]', { ...good, scopes: [1] }, '/scopes'],
    ['scopes ["everything"]', { ...good, scopes: ['everything'] }, '/scopes'],
    ['scopes 7', { ...good, scopes: 7 }, '/scopes'],
    // the body itself and unknown fields
    ['unknown field', { ...good, admin: true }, '/admin'],
  ];
  for (const [label, body, pointer] of cases) {
    const r = await create(body);
    assert.equal(r.status, 400, `${label}: ${JSON.stringify(r.body)}`);
    assert.match(r.type, /^application\/problem\+json/, label);
    assert.equal(r.body.code, 'invalid_request', label);
    assert.ok(
      (r.body.errors as { pointer: string }[]).some((e) => e.pointer === pointer),
      `${label}: expected ${pointer} in ${JSON.stringify(r.body.errors)}`,
    );
    assert.ok(!String(r.body.detail).includes('Error'), `${label}: ${r.body.detail}`);
  }
  for (const body of [null, [], 'x', 3, [good]]) {
    const r = await create(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.code, 'invalid_request');
  }
  assert.equal(rt.store.keys.list().length, before, 'no bad request created a key');
});

test('a valid limited key: names deduplicated and sorted; absent or null factories mean every factory', async () => {
  const limited = await create({ ...good, factories: ['b', 'a', 'b'] });
  assert.equal(limited.status, 201);
  assert.deepEqual(limited.body.factories, ['a', 'b']);
  assert.deepEqual(limited.body.scopes, ['manage']);

  for (const body of [{ ...good }, { ...good, factories: null }]) {
    const r = await create(body);
    assert.equal(r.status, 201);
    assert.equal(r.body.factories, null);
  }
  const defaulted = await create({ name: 'ci', kind: 'agent' });
  assert.equal(defaulted.status, 201);
  assert.deepEqual(defaulted.body.scopes, ['runs']);
});

test('through the CLI: a limit with admin, or a bad factory name, is a one-sentence error and exit 1', async () => {
  const env = terminalEnv({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey });
  const run = (args: string[]) => runCliInProcess(['key', 'create', ...args], { env });
  const before = rt.store.keys.list().length;
  for (const [args, pattern] of [
    [['--name', 'x', '--kind', 'agent', '--scope', 'admin', '--factory', 'payments'], /an admin key manages every factory/],
    [['--name', 'x', '--kind', 'agent', '--scope', 'manage', '--factory', 'Not A Name'], /is not a factory name/],
  ] as const) {
    const r = await run([...args]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '', 'no key printed');
    assert.match(r.stderr, pattern);
    // One sentence first (then the field it is about), never a stack trace.
    assert.match(r.stderr.split('\n')[0], /^error: The key is not valid: .+\.$/, r.stderr);
    assert.ok(!/\n\s+at /.test(r.stderr), r.stderr);
  }
  assert.equal(rt.store.keys.list().length, before);
});
