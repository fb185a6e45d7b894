import { escapePointer, schemaErrors, type SchemaError } from '../../core/schemas.ts';
import type { Diagnostic } from './diagnostics.ts';
import { isMarkdownKind, type DefinitionKind } from './paths.ts';
import { closest } from './suggest.ts';
import type { Position } from './yaml.ts';

export type Locate = (pointer: string, mode?: 'value' | 'key') => Position;

/**
 * Validates one file's value against its schema (one Ajv instance, all errors) and turns every
 * error into a diagnostic at the offending node. Errors that a named rule reports better are
 * left to that rule: the payload filter (checkFilter), signatureScheme (webhook rules), the
 * trigger provider and webhook_ids (automation rules).
 */
export function schemaDiagnostics(kind: DefinitionKind, file: string, value: unknown, at: Locate): Diagnostic[] {
  const out: Diagnostic[] = [];
  const errors = schemaErrors(kind, value).filter((e) => !leftToRules(kind, e));
  for (const e of errors) {
    const d = describe(kind, e);
    const pos = at(d.pointer, d.mode);
    out.push({ file, line: pos.line, column: pos.column, code: `${kind}.${d.rule}`, message: d.message, pointer: d.pointer, severity: 'error' });
  }
  return out;
}

function leftToRules(kind: DefinitionKind, e: SchemaError): boolean {
  // Branches of an anyOf: the anyOf error itself says what was expected.
  if (e.schemaPath.includes('/anyOf/')) return true;
  // The inner error of propertyNames repeats the propertyNames error.
  if (e.schemaPath.includes('/propertyNames/')) return true;
  if (kind === 'webhook') return e.keyword === 'if' || e.schemaPath.startsWith('#/then') || e.schemaPath.startsWith('#/else');
  // An `if` only selects which `then` applies; the `then` errors say what is wrong.
  if (e.keyword === 'if') return true;
  if (kind === 'automation') {
    if (/^\/triggers\/\d+\/filter\/payload(\/|$)/.test(e.instancePath)) return true;
    if (/^\/triggers\/\d+\/provider$/.test(e.instancePath) && e.keyword === 'enum') return true;
    if (/^\/triggers\/\d+\/filter\/webhook_ids$/.test(e.instancePath) && (e.keyword === 'minItems' || e.keyword === 'maxItems')) return true;
    if (/^\/triggers\/\d+\/filter\/webhook_ids\/\d+$/.test(e.instancePath) && e.keyword === 'pattern') return true;
  }
  return false;
}

interface Described {
  rule: 'unknown_key' | 'missing_key' | 'invalid_value';
  pointer: string;
  mode: 'value' | 'key';
  message: string;
}

function describe(kind: DefinitionKind, e: SchemaError): Described {
  const where = e.instancePath === '' ? `in ${isMarkdownKind(kind) ? 'the front matter' : 'this file'}` : `at ${e.instancePath}`;
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      const allowed = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const guess = closest(key, allowed);
      const hint = guess ? `; did you mean '${guess}'?` : allowed.length ? ` (allowed: ${allowed.join(', ')})` : '';
      return { rule: 'unknown_key', pointer: `${e.instancePath}/${escapePointer(key)}`, mode: 'key', message: `unknown key '${key}' ${where}${hint}` };
    }
    case 'required': {
      const key = (e.params as { missingProperty: string }).missingProperty;
      return { rule: 'missing_key', pointer: `${e.instancePath}/${escapePointer(key)}`, mode: 'value', message: `missing required key '${key}' ${where}` };
    }
    case 'propertyNames': {
      const name = (e.params as { propertyName: string }).propertyName;
      return {
        rule: 'invalid_value',
        pointer: `${e.instancePath}/${escapePointer(name)}`,
        mode: 'key',
        message: `'${name}' ${nameMeaning((e.parentSchema as { propertyNames?: { pattern?: string } } | undefined)?.propertyNames?.pattern)}`,
      };
    }
    default:
      return { rule: 'invalid_value', pointer: e.instancePath, mode: 'value', message: `${e.instancePath || 'value'} ${valueMessage(e)}` };
  }
}

function valueMessage(e: SchemaError): string {
  const got = quote(e.data);
  switch (e.keyword) {
    case 'type':
      return `must be ${article((e.params as { type: string }).type)}, got ${typeName(e.data)}`;
    case 'enum':
      return `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => quote(v)).join(', ')}, got ${got}`;
    case 'const':
      return `must be ${quote((e.params as { allowedValue: unknown }).allowedValue)}, got ${got}`;
    case 'pattern':
      return `${got} ${patternMeaning((e.params as { pattern: string }).pattern)}`;
    case 'minItems':
      return `must have at least ${(e.params as { limit: number }).limit} item(s)`;
    case 'maxItems':
      return `must have at most ${(e.params as { limit: number }).limit} item(s)`;
    case 'minLength':
      return 'must not be empty';
    case 'uniqueItems':
      return `must not list the same item twice (items ${(e.params as { j: number; i: number }).j} and ${(e.params as { i: number }).i})`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
      return `must be ${e.keyword === 'minimum' ? 'at least' : e.keyword === 'maximum' ? 'at most' : 'more than'} ${(e.params as { limit: number }).limit}, got ${got}`;
    case 'maxLength':
      return `must be at most ${(e.params as { limit: number }).limit} characters`;
    case 'anyOf':
      if (e.schemaPath.includes('providerFilter')) return `must be a list of values or {in: [...], not_in: [...]}, got ${typeName(e.data)}`;
      return `must be a string or {secret: NAME}, got ${typeName(e.data)}`;
    default:
      return e.message ?? 'is invalid';
  }
}

const PATTERNS: Record<string, string> = {
  '^[a-z0-9][a-z0-9-]{0,62}$': 'is not a valid name (lowercase letters, digits and -, starting with a letter or digit, at most 63 characters)',
  '^wh_[a-z2-7]{26}$': 'is not a webhook UID (wh_ followed by 26 lowercase base32 characters)',
  '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$': 'is not a valid secret name (letters, digits, _ . -, starting with a letter or digit, at most 128 characters)',
  "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$": 'is not a valid HTTP header name',
  '^(?=\\d)(\\d+h)?(\\d+m)?(\\d+s)?$': 'is not a duration such as 30m, 90s or 1h30m',
  '^[A-Za-z0-9 ._-]{1,60}$': 'is not a valid alias (up to 60 letters, digits, spaces, . _ -)',
  '^[0-9]{1,30}$': 'is not a project number (digits; quote it so YAML keeps it a string)',
  '^arn:[^:]+:iam::[0-9]{12}:role/.+$': 'is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)',
  '^(github\\.com|gitlab\\.com):[^/@\\s]+(/[^/@\\s]+)+@[0-9a-f]{40}$': 'is not github.com:OWNER/REPO@SHA or gitlab.com:OWNER/REPO@SHA with a full 40-character commit SHA',
  '^[A-Za-z][A-Za-z0-9_]{0,63}$': 'is not a valid filter key (letters, digits and _, starting with a letter)',
  '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$': 'is not a valid MCP server name (letters, digits, _ . -, starting with a letter or digit)',
};

const patternMeaning = (p: string) => PATTERNS[p] ?? `does not match ${p}`;
const nameMeaning = (p: string | undefined) =>
  p === undefined || p === '^[A-Za-z_][A-Za-z0-9_]*$' ? 'is not a valid variable name (letters, digits and _, not starting with a digit)' : patternMeaning(p);
const article = (t: string) => (t.includes(',') ? `one of ${t}` : /^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'a mapping';
  return `${article(typeof v)} (${quote(v)})`;
}

function quote(v: unknown): string {
  const s = typeof v === 'string' ? `'${v}'` : JSON.stringify(v) ?? String(v);
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}
