import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { validateSnapshot, schemaErrors } from '../../core/schemas.ts';

const SCHEMAS = ['factory', 'webhook', 'automation', 'environment', 'snapshot', 'agent', 'skill', 'runner', 'benchmark', 'benchmark-task', 'scorer'];
const load = (name: string) => JSON.parse(readFileSync(resolve(import.meta.dirname, `../../schemas/${name}.schema.json`), 'utf8'));

test('each schema is draft-07 with $id, title and a description on every property', () => {
  for (const name of SCHEMAS) {
    const schema = load(name);
    assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
    assert.equal(schema.$id, `https://factory.dev/schemas/${name}.schema.json`);
    assert.ok(schema.title);
    const walk = (node: unknown, path: string): void => {
      if (node === null || typeof node !== 'object') return;
      const props = (node as { properties?: Record<string, { description?: string }> }).properties;
      for (const [key, value] of Object.entries(props ?? {})) {
        assert.ok(value.description, `${name}: ${path}/properties/${key} has no description`);
      }
      // An `if` only selects a case; its properties are conditions, not documented keys.
      for (const [key, value] of Object.entries(node)) if (key !== 'if') walk(value, `${path}/${key}`);
    };
    walk(schema, '#');
  }
});

test('validateSnapshot accepts a snapshot and names what is wrong with a broken one', () => {
  const snapshot = {
    format_version: 1,
    factory: { name: 'f', source: { file: 'factory.yaml' } },
    webhooks: [{ name: 'ci', authMode: 'token', secretName: 's', source: { file: 'webhooks/ci.yaml' } }],
    automations: [],
    environments: [],
    sources: {},
    digest: 'sha256:' + '0'.repeat(64),
  };
  assert.deepEqual(validateSnapshot(snapshot), { ok: true, value: snapshot });
  const broken = { ...snapshot, webhooks: [{ ...snapshot.webhooks[0], signatureScheme: 'github', extra: 1 }] };
  const r = validateSnapshot(broken);
  assert.equal(r.ok, false);
  if (!r.ok) assert.ok(r.errors.some((e) => e.pointer === '/webhooks/0/extra'));
});

test('the filter grammar in the automation schema rejects what docs/filters.md calls compile errors', () => {
  const front = (payload: unknown) => ({ environment: 'e', triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: ['wh_' + 'a'.repeat(26)], payload } }] });
  assert.deepEqual(schemaErrors('automation', front({ a: [1, 'x', null], b: { in: ['x'], not_in: [], exists: true }, c: { d: { e: true } } })), []);
  for (const bad of [{ a: { in: [] } }, { a: { in: ['x'], foo: 1 } }, { a: { exists: 'yes' } }, { a: [{ x: 1 }] }, []]) {
    assert.notDeepEqual(schemaErrors('automation', front(bad)), [], JSON.stringify(bad));
  }
});

test('every schema compiles under Ajv strict mode (they are compiled on first use, so a broken one would wait for its kind)', () => {
  const kinds = ['factory', 'webhook', 'automation', 'environment', 'agent', 'skill', 'runner', 'benchmark', 'benchmark_task', 'scorer'] as const;
  assert.equal(kinds.length + 1, SCHEMAS.length, 'a kind for every schema file, and the snapshot');
  for (const kind of kinds) assert.ok(Array.isArray(schemaErrors(kind, {})), kind);
  assert.equal(validateSnapshot({}).ok, false);
});
