import { createRequire } from 'node:module';
import { escapePointer } from './json-walk.ts';
import type { Ajv as AjvInstance, ErrorObject, ValidateFunction } from 'ajv';
import factorySchema from '../schemas/factory.schema.json' with { type: 'json' };
import webhookSchema from '../schemas/webhook.schema.json' with { type: 'json' };
import automationSchema from '../schemas/automation.schema.json' with { type: 'json' };
import environmentSchema from '../schemas/environment.schema.json' with { type: 'json' };
import snapshotSchema from '../schemas/snapshot.schema.json' with { type: 'json' };
import agentSchema from '../schemas/agent.schema.json' with { type: 'json' };
import skillSchema from '../schemas/skill.schema.json' with { type: 'json' };
import runnerSchema from '../schemas/runner.schema.json' with { type: 'json' };
import benchmarkSchema from '../schemas/benchmark.schema.json' with { type: 'json' };
import benchmarkTaskSchema from '../schemas/benchmark-task.schema.json' with { type: 'json' };
import scorerSchema from '../schemas/scorer.schema.json' with { type: 'json' };
import secretCreateSchema from '../schemas/api/secret-create.schema.json' with { type: 'json' };
import secretUpdateSchema from '../schemas/api/secret-update.schema.json' with { type: 'json' };
import factoriesChangeSchema from '../schemas/api/factories-change.schema.json' with { type: 'json' };
import type { Snapshot } from './snapshot.ts';

/**
 * The one Ajv instance: every schema under schemas/ is compiled here, once, on its first use
 * (compiling all of them takes longer than the CLI takes to start, and `factory --help` needs none).
 * allErrors so that validate reports every problem at once (docs/plan-apply.md); strict so that a
 * typo in a schema fails loudly instead of silently allowing anything. strictRequired is off only
 * because the draft-07 idiom `then: {required: [x]}` names a key that the parent's `properties`
 * defines, and Ajv's strictRequired does not look at the parent. Union types serve the filter
 * grammar's scalars. verbose puts the failing schema on each error, which the compiler reads for
 * "did you mean".
 */
let ajv: AjvInstance | undefined;

/**
 * Ajv itself is loaded with the first compile too: its module graph is large enough to be a tenth
 * of `factory serve`'s start-up, and a runtime validates nothing until its first apply or API body.
 */
const requireHere = createRequire(import.meta.url);

/** What each definitions file kind is validated against. */
export type DefinitionKind =
  | 'factory'
  | 'webhook'
  | 'automation'
  | 'environment'
  | 'agent'
  | 'skill'
  | 'runner'
  | 'benchmark'
  | 'benchmark_task'
  | 'scorer';

const SCHEMAS: Record<DefinitionKind | 'snapshot', object> = {
  factory: factorySchema,
  webhook: webhookSchema,
  automation: automationSchema,
  environment: environmentSchema,
  agent: agentSchema,
  skill: skillSchema,
  runner: runnerSchema,
  benchmark: benchmarkSchema,
  benchmark_task: benchmarkTaskSchema,
  scorer: scorerSchema,
  snapshot: snapshotSchema,
};

/** Each schema's validator, compiled on its first use: definitions, the snapshot and API bodies alike. */
const compiled = new Map<object, ValidateFunction>();

function compileOnce(schema: object): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    if (!ajv) {
      const { Ajv } = requireHere('ajv') as typeof import('ajv');
      ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true, verbose: true });
    }
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

const validatorOf = (kind: DefinitionKind | 'snapshot') => compileOnce(SCHEMAS[kind]);

export type SchemaError = ErrorObject;

/** Raw Ajv errors of a definitions file (an automation's front matter); [] when valid. */
export function schemaErrors(kind: DefinitionKind, value: unknown): SchemaError[] {
  const validate = validatorOf(kind);
  return validate(value) ? [] : [...(validate.errors ?? [])];
}

/** One schema problem as a JSON pointer into the value and a sentence. */
export interface SchemaProblem {
  pointer: string;
  message: string;
}

/**
 * Turns Ajv errors into `{pointer, message}`. For a missing or an unknown key the pointer names
 * that key (under its parent), so callers can say exactly which one.
 */
export function toProblems(errors: SchemaError[]): SchemaProblem[] {
  return errors.map((e) => {
    if (e.keyword === 'required') {
      const key = (e.params as { missingProperty: string }).missingProperty;
      return { pointer: `${e.instancePath}/${escapePointer(key)}`, message: `missing required key '${key}'` };
    }
    if (e.keyword === 'additionalProperties') {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      return { pointer: `${e.instancePath}/${escapePointer(key)}`, message: `unknown key '${key}'` };
    }
    return { pointer: e.instancePath, message: e.message ?? 'is invalid' };
  });
}

export { escapePointer };

/**
 * Validates a snapshot against schemas/snapshot.schema.json. The runtime calls this before it
 * looks at anything else in a plan or apply request (docs/plan-apply.md: it never trusts the CLI).
 */
export function validateSnapshot(
  value: unknown,
): { ok: true; value: Snapshot } | { ok: false; errors: { pointer: string; message: string }[] } {
  const validate = validatorOf('snapshot');
  if (validate(value)) return { ok: true, value: value as Snapshot };
  return { ok: false, errors: toProblems([...(validate.errors ?? [])]) };
}

/** Request bodies the routes validate against their schema under schemas/api/ (docs/api.md#openapi). */
const API_BODIES = {
  'secret-create': secretCreateSchema,
  'secret-update': secretUpdateSchema,
  'factories-change': factoriesChangeSchema,
};
export type ApiBody = keyof typeof API_BODIES;

/**
 * Every problem of a request body against its schema, each a pointer and a sentence that names the
 * field (`grace_seconds must be integer`); [] when valid. `skip` leaves out the problems of these
 * keywords, for a caller whose own checks say them in better words.
 */
export function apiBodyProblems(name: ApiBody, value: unknown, options: { skip?: readonly string[] } = {}): SchemaProblem[] {
  const validate = compileOnce(API_BODIES[name]);
  if (validate(value)) return [];
  const errors = (validate.errors ?? []).filter((e) => !options.skip?.includes(e.keyword));
  return toProblems(errors).map((p, i) => {
    const e = errors[i];
    if (e.keyword === 'required' || e.keyword === 'additionalProperties') return p;
    const field = p.pointer === '' ? 'the body' : p.pointer.split('/').at(-1)!.replace(/~1/g, '/').replace(/~0/g, '~');
    return { pointer: p.pointer, message: `${/^\d+$/.test(field) ? `item ${field}` : field} ${plainMessage(e) ?? p.message}` };
  });
}

const A_TYPE: Record<string, string> = { object: 'an object', array: 'an array', string: 'a string', boolean: 'true or false', integer: 'an integer', number: 'a number', null: 'null' };

/** Ajv's terse messages of the common keywords in words (`must be an array or null`); undefined keeps Ajv's. */
function plainMessage(e: SchemaError): string | undefined {
  const params = e.params as { type?: string | string[]; limit?: number };
  if (e.keyword === 'type') return `must be ${([] as string[]).concat(params.type ?? []).map((t) => A_TYPE[t] ?? t).join(' or ')}`;
  if (e.keyword === 'maximum') return `must be at most ${params.limit}`;
  if (e.keyword === 'minimum') return `must be at least ${params.limit}`;
  return undefined;
}
