import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANSWER_SHAPES, answerShape, shapeProblem, type Shape } from '../../cli/answers.ts';
import { API_SCHEMAS, OPERATIONS } from '../../core/openapi.ts';

type Schema = { type?: string | string[]; enum?: unknown[]; $ref?: string; required?: string[]; properties?: Record<string, Schema>; items?: Schema; oneOf?: Schema[]; anyOf?: Schema[] };

const resolve = (s: Schema): Schema => (s.$ref ? resolve(API_SCHEMAS[s.$ref.replace(/\.schema\.json$/, '')] as Schema) : s);

/** The JSON types a schema allows ('integer' counts as 'number'); undefined when it says nothing. */
function typesOf(s: Schema): Set<string> | undefined {
  s = resolve(s);
  if (s.oneOf || s.anyOf) {
    const all = (s.oneOf ?? s.anyOf)!.map(typesOf);
    return all.some((t) => !t) ? undefined : new Set(all.flatMap((t) => [...t!]));
  }
  if (s.enum) return new Set(s.enum.map((v) => (v === null ? 'null' : typeof v)));
  if (s.type === undefined) return undefined;
  return new Set((Array.isArray(s.type) ? s.type : [s.type]).map((t) => (t === 'integer' ? 'number' : t === 'array' ? 'list' : t)));
}

/** Where `shape` asks for more than `schema` promises: a field not required, or a type (or null) the schema allows but the shape refuses. */
function stricter(shape: Shape, schema: Schema, at: string, orNull = false): string[] {
  // An object or list that may be null (`orNull(...)` in the shapes) holds its shape under a symbol.
  const [nullable] = typeof shape === 'object' ? Object.getOwnPropertySymbols(shape) : [];
  if (nullable) return stricter((shape as unknown as Record<symbol, Shape>)[nullable], schema, at, true);
  schema = resolve(schema);
  const allowed = typesOf(schema);
  const problems: string[] = [];
  if (allowed?.has('null') && !orNull && !(typeof shape === 'string' && shape.endsWith('|null'))) problems.push(`${at}: the schema allows null`);
  if (typeof shape === 'string') {
    const type = shape.split('|')[0];
    if (!allowed) return [...problems, `${at}: the schema does not say its type`];
    for (const t of allowed) if (t !== 'null' && t !== type) problems.push(`${at}: the schema allows ${t}, the shape wants ${type}`);
    return problems;
  }
  if (Array.isArray(shape)) {
    if (!allowed || [...allowed].some((t) => t !== 'list' && t !== 'null')) return [...problems, `${at}: the schema is not a list`];
    return [...problems, ...stricter(shape[0], schema.items ?? {}, `${at}[]`)];
  }
  if (!allowed || [...allowed].some((t) => t !== 'object' && t !== 'null')) return [...problems, `${at}: the schema is not an object`];
  // An object the schema leaves undescribed (no properties) is not compared further.
  if (!schema.properties) return problems;
  for (const [key, inner] of Object.entries(shape as Record<string, Shape>)) {
    const name = key.replace(/\?$/, '');
    const field = schema.properties?.[name];
    if (!field) {
      // An optional field the schema does not describe is only checked when present.
      if (!key.endsWith('?')) problems.push(`${at}.${name}: not in the schema`);
      continue;
    }
    if (!key.endsWith('?') && !schema.required?.includes(name)) problems.push(`${at}.${name}: the schema does not require it`);
    problems.push(...stricter(inner, field, `${at}.${name}`));
  }
  return problems;
}

test('each answer shape the CLI checks asks for no more than the runtime promises in its answer schema', () => {
  let compared = 0;
  for (const r of ANSWER_SHAPES) {
    const op = OPERATIONS.find((o) => o.method === r.method.toLowerCase() && o.path === r.path);
    assert.ok(op, `${r.method} ${r.path} is a route of the API`);
    if (!op.answer) continue;
    compared++;
    assert.deepEqual(stricter(r.shape, API_SCHEMAS[op.answer] as Schema, `${r.method} ${r.path}`), []);
  }
  assert.ok(compared >= 25, `most shapes have an answer schema to compare with (${compared})`);
});

test('shapeProblem names the first field that does not fit, with its path', () => {
  const shape = answerShape('GET', '/api/v1/agent/runs')!;
  assert.ok(shape);
  assert.ok(answerShape('GET', '/api/v1/agent/runs/run_x/transcript'));
  assert.equal(answerShape('GET', '/healthz'), undefined);
  // A schedule id is one URL-encoded segment.
  assert.ok(answerShape('POST', `/api/v1/agent/schedules/${encodeURIComponent('shop/nightly/#0')}/pause`));
  assert.equal(shapeProblem({ foo: 1 }, shape), '"runs" is missing');
  assert.equal(shapeProblem({ runs: {}, page_info: {} }, shape), '"runs" is an object, not a list');
  const run = {
    run_id: 'run_a', state: 'QUEUED', title: 't', config: { environment_id: 'e' }, source: 'API', creator: { type: 'user', name: 'n' },
    created_at: 'x', status_message: null, session_link: null,
  };
  assert.equal(shapeProblem({ runs: [run], page_info: { has_next_page: false, next_cursor: null } }, shape), undefined);
  assert.equal(shapeProblem({ runs: [run, { ...run, state: 3 }], page_info: {} }, shape), '"runs[1].state" is a number, not a string');
  assert.equal(shapeProblem({ runs: [{ ...run, config: null }], page_info: {} }, shape), '"runs[0].config" is null, not an object');
  assert.equal(shapeProblem({ runs: [{ ...run, webhook: {} }], page_info: {} }, shape), '"runs[0].webhook.url" is missing');
  assert.equal(shapeProblem({ runs: [], page_info: { has_next_page: true, next_cursor: 1 } }, shape), '"page_info.next_cursor" is a number, not a string or null');
  // Extra fields are welcome: a newer runtime may add some.
  assert.equal(shapeProblem({ runs: [{ ...run, extra: 1 }], page_info: { has_next_page: false, next_cursor: null }, more: true }, shape), undefined);
});
