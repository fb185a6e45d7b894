/**
 * Validation of the run API's inputs (docs/api.md). Pure: a parsed body or query in, a value or
 * every problem at once out, each problem with a JSON pointer (body) or the parameter name (query).
 */

import type { FieldError } from '../../core/errors.ts';
import { ENVIRONMENT_ID_PATTERN } from '../../core/harness.ts';
import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { jsonValueDepth, MAX_JSON_DEPTH } from '../../core/json-depth.ts';
import { isNotifySecret, notifyUrlProblem } from '../../core/notify.ts';
import { isRunState, type RunState } from '../../core/run-state.ts';
import { decodeCursor, type OzFields, type RunCursor, type RunListQuery, type RunSortKey, type RunSource } from '../store/runs.ts';
import { charCount } from '../../core/text.ts';

export const TITLE_MAX = 256;
export const METADATA_MAX_BYTES = 16 * 1024;
/** Oz create fields (docs/api.md#oz-compatibility): title and images are honoured, the others recorded. */
const CREATE_KEYS = ['prompt', 'config', 'title', 'metadata', 'skill', 'team', 'conversation_id', 'images', 'webhook'];
const CONFIG_KEYS = ['environment_id', 'base_prompt', 'computer_use_enabled', 'mcp_servers', 'model_id', 'name', 'skill_spec', 'worker_host'];
const CONFIG_STRINGS = ['base_prompt', 'model_id', 'name', 'skill_spec', 'worker_host'];
/** Oz: at most 5 images, each base64 of one of these types; they become attachments of the run. */
const MAX_IMAGES = 5;
const IMAGE_TYPES: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/gif': 'gif', 'image/webp': 'webp' };
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface CreateRunInput {
  prompt: string;
  /** Absent: the route picks the runtime's only environment (docs/api.md#oz-compatibility). */
  environmentId?: string;
  title: string | null;
  metadata: Record<string, unknown> | null;
  oz: OzFields | null;
  images: { name: string; bytes: Buffer }[];
  /** Where to report state changes (docs/api.md#run-notifications); no secret: the route generates one. */
  webhook: { url: string; secret?: string } | null;
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
  if (prompt === undefined) errors.push({ pointer: '/prompt', message: `prompt is required${body.skill !== undefined ? '; this runtime records skill but does not turn a skill into a prompt' : ''}` });
  else if (typeof prompt !== 'string') errors.push({ pointer: '/prompt', message: `prompt must be a string, got ${typeName(prompt)}` });
  else if (prompt.trim() === '') errors.push({ pointer: '/prompt', message: 'prompt must not be empty' });

  let environmentId: unknown;
  const oz: OzFields = {};
  if (config !== undefined && !isObject(config)) errors.push({ pointer: '/config', message: `config must be an object, got ${typeName(config)}` });
  else if (config !== undefined) {
    for (const key of Object.keys(config)) {
      if (!CONFIG_KEYS.includes(key)) errors.push({ pointer: `/config/${key}`, message: `unknown key "${key}"; expected ${CONFIG_KEYS.join(', ')}` });
    }
    for (const key of CONFIG_STRINGS) {
      const v = config[key];
      if (v !== undefined && v !== null && (typeof v !== 'string' || charCount(v) > 1000)) {
        errors.push({ pointer: `/config/${key}`, message: `config.${key} must be a string of at most 1000 characters` });
      }
    }
    if (config.computer_use_enabled !== undefined && config.computer_use_enabled !== null && typeof config.computer_use_enabled !== 'boolean') {
      errors.push({ pointer: '/config/computer_use_enabled', message: `config.computer_use_enabled must be a boolean, got ${typeName(config.computer_use_enabled)}` });
    }
    if (config.mcp_servers !== undefined && config.mcp_servers !== null && !isObject(config.mcp_servers)) {
      errors.push({ pointer: '/config/mcp_servers', message: `config.mcp_servers must be an object of servers by name, got ${typeName(config.mcp_servers)}` });
    }
    const { environment_id: _, ...rest } = config;
    const recorded = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null && v !== undefined));
    if (Object.keys(recorded).length) oz.config = recorded;
    environmentId = config.environment_id ?? undefined;
    if (environmentId === undefined) {
      // Oz picks the team's default environment; the route picks the runtime's only one.
    } else if (typeof environmentId !== 'string') {
      errors.push({ pointer: '/config/environment_id', message: `config.environment_id must be a string, got ${typeName(environmentId)}` });
    } else if (!ENVIRONMENT_ID_PATTERN.test(environmentId)) {
      errors.push({ pointer: '/config/environment_id', message: `"${environmentId}" is not an environment id (a name such as sandbox, or agent:<factory>/<agent>)` });
    }
  }
  if (title !== undefined && title !== null) {
    if (typeof title !== 'string') errors.push({ pointer: '/title', message: `title must be a string, got ${typeName(title)}` });
    else if (charCount(title) > TITLE_MAX) errors.push({ pointer: '/title', message: `title must be at most ${TITLE_MAX} characters` });
  }
  for (const key of ['skill', 'conversation_id'] as const) {
    const v = body[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v === '' || charCount(v) > 1000) errors.push({ pointer: `/${key}`, message: `${key} must be a non-empty string of at most 1000 characters` });
    else oz[key] = v;
  }
  if (body.team !== undefined && body.team !== null) {
    if (typeof body.team !== 'boolean') errors.push({ pointer: '/team', message: `team must be a boolean, got ${typeName(body.team)}` });
    else oz.team = body.team;
  }
  const images = parseImages(body.images, errors);
  const webhook = parseWebhook(body.webhook, errors);
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
      environmentId: environmentId as string | undefined,
      title: (title as string | null | undefined) ?? null,
      metadata: (metadata as Record<string, unknown> | null | undefined) ?? null,
      oz: Object.keys(oz).length ? oz : null,
      images,
      webhook,
    },
    errors,
  };
}

/** `webhook: {url, secret?}` (Cursor's shape): an http(s) URL, and a `whsec_` secret when given. */
function parseWebhook(v: unknown, errors: FieldError[]): { url: string; secret?: string } | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) {
    errors.push({ pointer: '/webhook', message: `webhook must be an object {url, secret?}, got ${typeName(v)}` });
    return null;
  }
  for (const key of Object.keys(v)) if (key !== 'url' && key !== 'secret') errors.push({ pointer: `/webhook/${key}`, message: `unknown key "${key}"; expected url, secret` });
  const problem = notifyUrlProblem(v.url);
  if (problem) errors.push({ pointer: '/webhook/url', message: `webhook.url ${problem}` });
  if (v.secret !== undefined && v.secret !== null && !isNotifySecret(v.secret)) {
    errors.push({ pointer: '/webhook/secret', message: 'webhook.secret must be a Standard Webhooks secret: whsec_ followed by the base64 of 24 to 64 random bytes (leave it out and one is generated)' });
  }
  return { url: v.url as string, ...(typeof v.secret === 'string' ? { secret: v.secret } : {}) };
}

/** Oz's `images`: up to 5 `{data: base64, mime_type}`, attached to the run as image-<n>.<ext>. */
function parseImages(images: unknown, errors: FieldError[]): { name: string; bytes: Buffer }[] {
  if (images === undefined || images === null) return [];
  if (!Array.isArray(images)) {
    errors.push({ pointer: '/images', message: `images must be an array, got ${typeName(images)}` });
    return [];
  }
  if (images.length > MAX_IMAGES) errors.push({ pointer: '/images', message: `at most ${MAX_IMAGES} images, got ${images.length}` });
  const out: { name: string; bytes: Buffer }[] = [];
  images.slice(0, MAX_IMAGES).forEach((img, i) => {
    const at = `/images/${i}`;
    if (!isObject(img)) return void errors.push({ pointer: at, message: `an image must be {data, mime_type}, got ${typeName(img)}` });
    for (const key of Object.keys(img)) if (key !== 'data' && key !== 'mime_type') errors.push({ pointer: `${at}/${key}`, message: `unknown key "${key}"; expected data, mime_type` });
    const ext = typeof img.mime_type === 'string' ? IMAGE_TYPES[img.mime_type] : undefined;
    if (!ext) errors.push({ pointer: `${at}/mime_type`, message: `mime_type must be one of ${Object.keys(IMAGE_TYPES).join(', ')}` });
    if (typeof img.data !== 'string' || img.data === '' || !BASE64.test(img.data)) {
      errors.push({ pointer: `${at}/data`, message: 'data must be the image as standard base64' });
    } else if (ext) out.push({ name: `image-${i + 1}.${ext}`, bytes: Buffer.from(img.data, 'base64') });
  });
  return out;
}

/** The list query, as the store takes it (runtime/store/runs.ts RunListQuery). */
export type ListRunsInput = RunListQuery;

type Query = Record<string, string | string[] | undefined>;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

/**
 * Oz's run states a run here never has: this runtime's runs go QUEUED → INPROGRESS without a
 * PENDING or CLAIMED step and are never BLOCKED, so these filters match nothing.
 */
const OZ_ONLY_STATES = ['PENDING', 'CLAIMED', 'BLOCKED'] as const;
/** Oz's run sources; only API runs exist here (besides this runtime's WEBHOOK). */
const OZ_SOURCES = ['LINEAR', 'API', 'SLACK', 'LOCAL', 'SCHEDULED_AGENT', 'WEB_APP', 'GITHUB_ACTION', 'CLOUD_MODE', 'CLI'];
/** Every parameter the list reads; any other is a 400 that names it, never silently ignored. */
export const LIST_PARAMS = [
  'limit', 'cursor', 'state', 'source', 'environment_id', 'factory', 'automation', 'created_after', 'created_before',
  'updated_after', 'creator', 'q', 'name', 'model_id', 'skill', 'skill_spec', 'schedule_id', 'artifact_type', 'sort_by', 'sort_order',
];

/**
 * `GET /api/v1/agent/runs` query, this runtime's parameters and Oz's
 * (docs/api.md#oz-compatibility); `state` may repeat or be comma-separated.
 */
export function parseListRuns(query: Query, limits: { runListDefault: number; runListMax: number }): { value?: ListRunsInput; errors: FieldError[] } {
  const errors: FieldError[] = [];
  for (const name of Object.keys(query)) {
    if (!LIST_PARAMS.includes(name)) errors.push({ pointer: name, message: `unknown parameter "${name}"; the list takes ${LIST_PARAMS.join(', ')}` });
  }
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
  const rawStates = query.state === undefined ? [] : ([] as string[]).concat(query.state).flatMap((s) => s.split(','));
  if (rawStates.length) {
    const bad = rawStates.filter((s) => !isRunState(s) && !(OZ_ONLY_STATES as readonly string[]).includes(s));
    if (bad.length) {
      errors.push({ pointer: 'state', message: `unknown state ${bad.map((s) => `"${s}"`).join(', ')}; expected QUEUED, INPROGRESS, SUCCEEDED, FAILED, ERROR, CANCELLED (or Oz's PENDING, CLAIMED, BLOCKED, which no run here has)` });
    } else {
      out.states = [...new Set(rawStates.filter(isRunState))] as RunState[];
      if (out.states.length === 0) out.none = true;
    }
  }
  const source = one('source');
  if (source !== undefined) {
    if (source === 'API' || source === 'WEBHOOK' || source === 'SCHEDULE') out.source = source;
    // Oz's name for runs started by a schedule.
    else if (source === 'SCHEDULED_AGENT') out.source = 'SCHEDULE';
    else if (OZ_SOURCES.includes(source)) out.none = true;
    else errors.push({ pointer: 'source', message: `source must be API, WEBHOOK or SCHEDULE (or another Oz source, which no run here has), got "${source}"` });
  }
  for (const [name, key] of [['environment_id', 'environmentId'], ['factory', 'factory'], ['automation', 'automation']] as const) {
    const v = one(name);
    if (v === undefined) continue;
    const pattern = name === 'environment_id' ? ENVIRONMENT_ID_PATTERN : RESOURCE_NAME_PATTERN;
    if (!pattern.test(v)) errors.push({ pointer: name, message: `${name} "${v}" is not a valid ${name === 'environment_id' ? 'environment id' : 'name'}` });
    else out[key] = v;
  }
  for (const [name, key] of [['created_after', 'createdAfter'], ['created_before', 'createdBefore'], ['updated_after', 'updatedAfter']] as const) {
    const v = one(name);
    if (v === undefined) continue;
    const ms = RFC3339.test(v) && isCalendarTime(v) ? Date.parse(v) : NaN;
    if (Number.isNaN(ms)) errors.push({ pointer: name, message: `${name} must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z, got "${v}"` });
    else out[key] = new Date(ms).toISOString();
  }
  for (const [name, key] of [['creator', 'creator'], ['q', 'q'], ['name', 'configName'], ['model_id', 'modelId'], ['schedule_id', 'scheduleId']] as const) {
    const v = one(name);
    if (v === undefined) continue;
    if (v === '' || charCount(v) > 1000) errors.push({ pointer: name, message: `${name} must be 1 to 1000 characters` });
    else out[key] = v;
  }
  const skill = one('skill');
  const skillSpec = one('skill_spec');
  if (skill !== undefined && skillSpec !== undefined && skill !== skillSpec) {
    errors.push({ pointer: 'skill', message: 'skill is an alias of skill_spec; give one, or the same value' });
  } else if ((skill ?? skillSpec) !== undefined) out.skill = skill ?? skillSpec;
  // No run here has an artifact: a valid filter, an empty page.
  const artifact = one('artifact_type');
  if (artifact !== undefined) {
    if (!['PLAN', 'PULL_REQUEST', 'SCREENSHOT'].includes(artifact)) errors.push({ pointer: 'artifact_type', message: `artifact_type must be PLAN, PULL_REQUEST or SCREENSHOT, got "${artifact}"` });
    else out.none = true;
  }
  const sortBy = one('sort_by');
  if (sortBy !== undefined) {
    if (sortBy !== 'created_at' && sortBy !== 'updated_at') errors.push({ pointer: 'sort_by', message: `sort_by must be created_at or updated_at, got "${sortBy}"` });
    else out.sortBy = sortBy;
  }
  const sortOrder = one('sort_order');
  if (sortOrder !== undefined) {
    if (sortOrder !== 'asc' && sortOrder !== 'desc') errors.push({ pointer: 'sort_order', message: `sort_order must be asc or desc, got "${sortOrder}"` });
    else out.sortOrder = sortOrder;
  }
  const cursor = one('cursor');
  if (cursor !== undefined) {
    out.cursor = decodeCursor(cursor);
    if (!out.cursor) errors.push({ pointer: 'cursor', message: 'cursor is not a next_cursor returned by this API' });
    else if ((out.cursor.sortBy ?? 'created_at') !== (out.sortBy ?? 'created_at') || (out.cursor.sortOrder ?? 'desc') !== (out.sortOrder ?? 'desc')) {
      errors.push({ pointer: 'cursor', message: 'cursor belongs to a list in another order; give the same sort_by and sort_order as the first page' });
    }
  }
  return errors.length ? { errors } : { value: out, errors };
}

/** `?after=<seq>` of the transcript: a non-negative integer, default 0. */
export function parseAfter(v: string | string[] | undefined): number | FieldError {
  if (v === undefined) return 0;
  if (Array.isArray(v) || !/^\d{1,15}$/.test(v)) return { pointer: 'after', message: `after must be a non-negative integer seq, got "${String(v)}"` };
  return Number(v);
}

/**
 * Whether the date and time an RFC 3339 timestamp spells exist (Date.parse rolls 2026-02-30 over
 * into March): a month of 1 to 12, a day its month has, hours to 23, minutes to 59, seconds to 60
 * (a leap second), and an offset of at most 23:59.
 */
function isCalendarTime(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/.exec(v);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 60 && offsetOk;
}
