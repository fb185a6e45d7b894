import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import { documentAjv } from './openapi-ajv.ts';
import { ERROR_CODES } from '../../core/errors.ts';
import { API_SCHEMAS, buildOpenApi, componentName, openApiText } from '../../core/openapi.ts';

const ROOT = resolve(import.meta.dirname, '../..');

test('the document is valid OpenAPI 3.1 (with and without servers)', async () => {
  for (const doc of [buildOpenApi(), buildOpenApi({ baseUrl: 'http://127.0.0.1:8080' })]) {
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.equal(validator.version, '3.1');
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
  }
});

test('schemas/openapi.json is what core/openapi.ts builds (else run npm run openapi)', () => {
  const committed = readFileSync(resolve(ROOT, 'schemas/openapi.json'), 'utf8');
  assert.equal(committed, openApiText(), 'schemas/openapi.json is stale: run `npm run openapi` and commit it');
});

test('each API schema compiles strictly as draft-07 and, as embedded, as 2020-12', () => {
  // draft-07 like every file under schemas/; the document's copies in OpenAPI 3.1's dialect.
  const draft7 = new Ajv({ strict: true, strictRequired: false, allowUnionTypes: true });
  for (const schema of Object.values(API_SCHEMAS)) draft7.addSchema(schema);
  for (const name of Object.keys(API_SCHEMAS)) assert.ok(draft7.getSchema(`https://factory.dev/schemas/api/${name}.schema.json`), name);

  const doc = buildOpenApi() as { components: { schemas: Record<string, object> } };
  const a2020 = documentAjv(doc);
  for (const name of Object.keys(API_SCHEMAS)) {
    assert.ok(a2020.getSchema(`openapi#/components/schemas/${componentName(name)}`), name);
  }
});

test('the draft-07 files and their 2020-12 copies judge the same values alike', () => {
  const draft7 = new Ajv({ strict: true, strictRequired: false, allowUnionTypes: true });
  for (const schema of Object.values(API_SCHEMAS)) draft7.addSchema(schema);
  const a2020 = documentAjv(buildOpenApi());
  const cases: [string, unknown, boolean][] = [
    ['run-create', { prompt: 'hi', config: { environment_id: 'sandbox' } }, true],
    ['run-create', { prompt: 'hi', config: { environment_id: 'agent:f/a', model_id: 'm' }, images: [{ data: 'aGk=', mime_type: 'image/png' }] }, true],
    ['run-create', { prompt: '   ' }, false],
    ['run-create', { prompt: 'hi', extra: 1 }, false],
    ['run-create', { prompt: 'hi', config: null }, false],
    ['webhook-create', { name: 'ci', auth_mode: null, secret_name: null }, true],
    ['run-create', { config: { environment_id: 'sandbox' } }, false],
    ['run-create', { prompt: 'hi', webhook: { url: 'ftp://x' } }, false],
    ['run-list', { runs: [], page_info: { has_next_page: false, next_cursor: null } }, true],
    ['run-list', { runs: [{ run_id: 'nope' }], page_info: { has_next_page: false, next_cursor: null } }, false],
    ['key-create', { name: 'ci', kind: 'agent', scopes: ['runs'] }, true],
    ['key-create', { name: 'ci', kind: 'robot' }, false],
    ['key-create', { name: 'Alice Smith', kind: 'personal', scopes: ['manage'], factories: ['web'] }, true],
    ['key-create', { name: 'a\nb', kind: 'personal' }, false],
    ['key-create', { name: 'ops', kind: 'personal', factories: [] }, false],
    ['problem', { type: 't', title: 't', status: 400, detail: 'd', instance: '/', code: 'invalid_request', error: 'invalid_request', retryable: false }, true],
    ['problem', { type: 't', title: 't', status: 400, detail: 'd', instance: '/', code: 'no_such_code', error: 'x', retryable: false }, false],
  ];
  for (const [name, value, valid] of cases) {
    const v7 = draft7.getSchema(`https://factory.dev/schemas/api/${name}.schema.json`)!;
    const v20 = a2020.getSchema(`openapi#/components/schemas/${componentName(name)}`)!;
    assert.equal(v7(value), valid, `draft-07 ${name} ${JSON.stringify(value)}`);
    assert.equal(v20(value), valid, `2020-12 ${name} ${JSON.stringify(value)}`);
  }
});

test('every schema file under schemas/api/ is part of the document', () => {
  const files = readFileSync(resolve(ROOT, 'schemas/openapi.json'), 'utf8');
  const names = (JSON.parse(files) as { components: { schemas: Record<string, unknown> } }).components.schemas;
  const onDisk = new Set(readdirSync(resolve(ROOT, 'schemas/api')).map((f) => componentName(f.replace(/\.schema\.json$/, ''))));
  assert.deepEqual([...onDisk].sort(), Object.keys(names).sort());
});

test('the problem schema lists exactly the stable codes of core/errors.ts', () => {
  const codes = (API_SCHEMAS.problem as { properties: { code: { enum: string[] } } }).properties.code.enum;
  assert.deepEqual([...codes].sort(), Object.keys(ERROR_CODES).sort());
});
