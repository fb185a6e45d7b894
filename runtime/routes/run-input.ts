/**
 * Validation of the run API's inputs (SPEC 6). Pure: a parsed body or query in, a value or every
 * problem at once out, each problem with a JSON pointer (body) or the parameter name (query).
 */

import type { FieldError } from '../../core/errors.ts';
import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { jsonValueDepth, MAX_JSON_DEPTH } from '../../core/json-depth.ts';
import { isRunState, type RunState } from '../../core/run-state.ts';
import { decodeCursor, type RunCursor, type RunSource } from '../store/runs.ts';

export const TITLE_MAX = 256;
export const METADATA_MAX_BYTES = 16 * 1024;
const CREATE_KEYS = ['prompt', 'config', 'title', 'metadata'];
const CONFIG_KEYS = ['environment_id'];

export interface CreateRunInput {
  prompt: string;
  environmentId: string;
  title: string | null;
  metadata: Record<string, unknown> | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** `POST /api/v1/agent/runs` body: `{prompt, config: {environment_id}, title?, metadata?}`. */
export function parseCreateRun(body: unknown): { value?: CreateRunInput; errors: FieldError[] } {
  if (!isObject(body)) {
    return { errors: [{ pointer: '', message: `the body must be a JSON object {prompt, config: {environment_id}}, got ${typeName(body)}` }] };
  }
  const errors: FieldError[] = [];
  for (const key of Object.keys(body)) {
    if (!CREATE_KEYS.includes(key)) errors.push({ pointer: `/${key}`, message: `unknown key "${key}"; expected ${CREATE_KEYS.join(', ')}` });
  }
  const { prompt, config, title, metadata } = body;
  if (prompt === undefined) errors.push({ pointer: '/prompt', message: 'prompt is required' });
  else if (typeof prompt !== 'string') errors.push({ pointer: '/prompt', message: `prompt must be a string, got ${typeName(prompt)}` });
  else if (prompt.trim() === '') errors.push({ pointer: '/prompt', message: 'prompt must not be empty' });

  let environmentId: unknown;
  if (config === undefined) errors.push({ pointer: '/config', message: 'config is required: {"environment_id": "<environment>"}' });
  else if (!isObject(config)) errors.push({ pointer: '/config', message: `config must be an object, got ${typeName(config)}` });
  else {
    for (const key of Object.keys(config)) {
      if (!CONFIG_KEYS.includes(key)) errors.push({ pointer: `/config/${key}`, message: `unknown key "${key}"; expected environment_id` });
    }
    environmentId = config.environment_id;
    if (environmentId === undefined) errors.push({ pointer: '/config/environment_id', message: 'config.environment_id is required' });
    else if (typeof environmentId !== 'string') {
      errors.push({ pointer: '/config/environment_id', message: `config.environment_id must be a string, got ${typeName(environmentId)}` });
    } else if (!RESOURCE_NAME_PATTERN.test(environmentId)) {
      errors.push({ pointer: '/config/environment_id', message: `"${environmentId}" is not an environment name (${RESOURCE_NAME_PATTERN.source})` });
    }
  }
  if (title !== undefined && title !== null) {
    if (typeof title !== 'string') errors.push({ pointer: '/title', message: `title must be a string, got ${typeName(title)}` });
    else if (title.length > TITLE_MAX) errors.push({ pointer: '/title', message: `title must be at most ${TITLE_MAX} characters` });
  }
  if (metadata !== undefined && metadata !== null) {
    if (!isObject(metadata)) errors.push({ pointer: '/metadata', message: `metadata must be an object, got ${typeName(metadata)}` });
    // Depth first, without recursion: JSON.stringify below (and the run view later) would
    // overflow the stack on a value nested thousands of levels deep.
    else if (jsonValueDepth(metadata, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      errors.push({ pointer: '/metadata', message: `metadata must not nest deeper than ${MAX_JSON_DEPTH} levels` });
    } else if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_MAX_BYTES) {
      errors.push({ pointer: '/metadata', message: `metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON` });
    }
  }
  if (errors.length) return { errors };
  return {
    value: {
      prompt: prompt as string,
      environmentId: environmentId as string,
      title: (title as string | null | undefined) ?? null,
      metadata: (metadata as Record<string, unknown> | null | undefined) ?? null,
    },
    errors,
  };
}

export interface ListRunsInput {
  limit: number;
  cursor?: RunCursor;
  states?: RunState[];
  environmentId?: string;
  source?: RunSource;
  factory?: string;
  automation?: string;
  createdAfter?: string;
  createdBefore?: string;
}

type Query = Record<string, string | string[] | undefined>;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

/** `GET /api/v1/agent/runs` query (SPEC 6); `state` may repeat or be comma-separated. */
export function parseListRuns(query: Query, limits: { runListDefault: number; runListMax: number }): { value?: ListRunsInput; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const one = (name: string): string | undefined => {
    const v = query[name];
    if (Array.isArray(v)) {
      errors.push({ pointer: name, message: `${name} may be given once` });
      return undefined;
    }
    return v;
  };
  const out: ListRunsInput = { limit: limits.runListDefault };
  const limit = one('limit');
  if (limit !== undefined) {
    const n = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
    if (!(n >= 1 && n <= limits.runListMax)) errors.push({ pointer: 'limit', message: `limit must be an integer from 1 to ${limits.runListMax}, got "${limit}"` });
    else out.limit = n;
  }
  const cursor = one('cursor');
  if (cursor !== undefined) {
    out.cursor = decodeCursor(cursor);
    if (!out.cursor) errors.push({ pointer: 'cursor', message: 'cursor is not a next_cursor returned by this API' });
  }
  const rawStates = query.state === undefined ? [] : ([] as string[]).concat(query.state).flatMap((s) => s.split(','));
  if (rawStates.length) {
    const bad = rawStates.filter((s) => !isRunState(s));
    if (bad.length) errors.push({ pointer: 'state', message: `unknown state ${bad.map((s) => `"${s}"`).join(', ')}; expected QUEUED, INPROGRESS, SUCCEEDED, FAILED, ERROR or CANCELLED` });
    else out.states = [...new Set(rawStates)] as RunState[];
  }
  const source = one('source');
  if (source !== undefined) {
    if (source !== 'API' && source !== 'WEBHOOK') errors.push({ pointer: 'source', message: `source must be API or WEBHOOK, got "${source}"` });
    else out.source = source;
  }
  for (const [name, key] of [['environment_id', 'environmentId'], ['factory', 'factory'], ['automation', 'automation']] as const) {
    const v = one(name);
    if (v === undefined) continue;
    if (!RESOURCE_NAME_PATTERN.test(v)) errors.push({ pointer: name, message: `${name} "${v}" is not a valid name` });
    else out[key] = v;
  }
  for (const [name, key] of [['created_after', 'createdAfter'], ['created_before', 'createdBefore']] as const) {
    const v = one(name);
    if (v === undefined) continue;
    const ms = RFC3339.test(v) ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) errors.push({ pointer: name, message: `${name} must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z, got "${v}"` });
    else out[key] = new Date(ms).toISOString();
  }
  return errors.length ? { errors } : { value: out, errors };
}

/** `?after=<seq>` of the transcript: a non-negative integer, default 0. */
export function parseAfter(v: string | string[] | undefined): number | FieldError {
  if (v === undefined) return 0;
  if (Array.isArray(v) || !/^\d{1,15}$/.test(v)) return { pointer: 'after', message: `after must be a non-negative integer seq, got "${String(v)}"` };
  return Number(v);
}
