import { createHash } from 'node:crypto';
import { conflict, invalidRequest, notFound, type FieldError } from '../../core/errors.ts';
import { newApiKey, newId, RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { iso } from '../clock.ts';
import type { StoreContext } from './index.ts';
import { PLAIN_NAME, echoed } from '../../core/text.ts';

export const SCOPES = ['runs', 'manage', 'worker', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
export const KEY_KINDS = ['personal', 'agent'] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

/** An API key as the API shows it: never the raw key, never its hash. */
export interface ApiKey {
  id: string;
  name: string;
  kind: KeyKind;
  scopes: Scope[];
  /** Factories a `manage` key is limited to; null means every factory. */
  factories: string[] | null;
  created_at: string;
  revoked_at: string | null;
}

export interface NewKey {
  name: string;
  kind: KeyKind;
  scopes: Scope[];
  factories?: string[] | null;
}

interface Row {
  id: string;
  name: string;
  kind: KeyKind;
  scopes: string;
  factories: string | null;
  created_at: string;
  revoked_at: string | null;
}


const hashKey = (raw: string): Buffer => createHash('sha256').update(raw, 'utf8').digest();

/** API keys (docs/runtime.md): only the sha256 of a raw key is stored; the raw key is returned once. */
export class KeyStore {
  private readonly ctx: StoreContext;
  private readonly insert;
  private readonly all;
  private readonly byId;
  private readonly byHash;
  private readonly setRevoked;
  private readonly countAll;
  private readonly activeAdmins;

  constructor(ctx: StoreContext) {
    this.ctx = ctx;
    const db = ctx.db;
    this.insert = db.prepare(
      'INSERT INTO api_keys (id, name, kind, scopes, factories, key_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const cols = 'id, name, kind, scopes, factories, created_at, revoked_at';
    this.all = db.prepare(`SELECT ${cols} FROM api_keys ORDER BY created_at, id`);
    this.byId = db.prepare(`SELECT ${cols} FROM api_keys WHERE id = ?`);
    this.byHash = db.prepare(`SELECT ${cols} FROM api_keys WHERE key_hash = ?`);
    this.setRevoked = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
    this.countAll = db.prepare('SELECT count(*) AS n FROM api_keys');
    this.activeAdmins = db.prepare(
      ctx.dialect === 'postgres'
        ? `SELECT id FROM api_keys WHERE revoked_at IS NULL AND scopes::jsonb @> '["admin"]'::jsonb`
        : `SELECT id FROM api_keys WHERE revoked_at IS NULL AND EXISTS (SELECT 1 FROM json_each(scopes) WHERE value = 'admin')`,
    );
  }

  /**
   * Creates a key. Returns its id and the raw key, which is never available again. `input` is
   * checked whatever its shape (it may come straight from a request body): see checkNewKey.
   */
  create(input: NewKey): { id: string; raw: string; key: ApiKey } {
    const { scopes, factories } = checkNewKey(input);
    const id = newId('key');
    const raw = newApiKey();
    const now = iso(this.ctx.clock.now());
    this.insert.run(id, input.name, input.kind, JSON.stringify(scopes), factories && JSON.stringify(factories), hashKey(raw), now);
    return { id, raw, key: this.get(id)! };
  }

  list(): ApiKey[] {
    return (this.all.all() as Row[]).map(toKey);
  }

  get(id: string): ApiKey | undefined {
    const row = this.byId.get(id) as Row | undefined;
    return row && toKey(row);
  }

  count(): number {
    return (this.countAll.get() as { n: number }).n;
  }

  /**
   * The key whose raw form is `raw`, revoked or not (the caller refuses revoked ones).
   *
   * Looking the hash up through the UNIQUE index is not a timing oracle: the B-tree walk
   * compares sha256(candidate), not the candidate, so its timing can at most tell an attacker
   * how many leading bytes of *their own guess's hash* match a stored hash, and that gives no
   * way to steer the next guess (finding a preimage of a chosen hash prefix is as hard as
   * guessing a 256-bit key).
   */
  findByRaw(raw: string): ApiKey | undefined {
    const row = this.byHash.get(hashKey(raw)) as Row | undefined;
    return row && toKey(row);
  }

  /**
   * Revokes a key at once (every later request with it is a 401). Revoking a revoked key is a
   * no-op. The last active admin key cannot be revoked: nothing could create another one.
   */
  revoke(id: string): ApiKey {
    const key = this.get(id);
    if (!key) throw notFound(`No API key has the id "${echoed(id)}".`);
    if (key.revoked_at) return key;
    const admins = this.activeAdmins.all() as { id: string }[];
    if (key.scopes.includes('admin') && admins.length === 1 && admins[0].id === id) {
      throw conflict(`"${id}" is the last active admin key; create another admin key before revoking it.`);
    }
    this.setRevoked.run(iso(this.ctx.clock.now()), id);
    return this.get(id)!;
  }
}

/** The most factories one key may be limited to (the list is stored with the key and read on every request). */
const MAX_KEY_FACTORIES = 100;

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/**
 * Validates a new key of any shape (a request body's fields arrive unchecked) and returns its
 * scopes and factories in stored form (deduplicated, in a fixed order). Every problem is a 400
 * with a pointer; nothing here can throw anything else.
 *
 * `factories` limits the `manage`, `runs` and `worker` scopes alike (docs/runtime.md#factory-limited-keys).
 * It makes no sense with `admin` (which implies every factory: the limit would silently do nothing),
 * so that is refused. It is absent or null for every factory, otherwise a non-empty list: `[]`
 * would be a key that reaches nothing.
 */
export function checkNewKey(input: unknown): { scopes: Scope[]; factories: string[] | null } {
  const errors: FieldError[] = [];
  const b = (input !== null && typeof input === 'object' && !Array.isArray(input) ? input : {}) as Record<string, unknown>;
  if (typeof b.name !== 'string' || !PLAIN_NAME.test(b.name)) {
    errors.push({ pointer: '/name', message: 'name must be a string of 1 to 128 characters without control characters' });
  }
  if (typeof b.kind !== 'string' || !(KEY_KINDS as readonly string[]).includes(b.kind)) {
    errors.push({ pointer: '/kind', message: 'kind must be "personal" or "agent"' });
  }
  const scopeList = b.scopes;
  const scopesOk = isStringArray(scopeList) && scopeList.length > 0 && scopeList.every((s) => (SCOPES as readonly string[]).includes(s));
  if (!scopesOk) errors.push({ pointer: '/scopes', message: 'scopes must be a non-empty list of "runs", "manage", "worker" and "admin"' });
  const scopes = scopesOk ? SCOPES.filter((s) => scopeList.includes(s)) : [];
  let factories: string[] | null = null;
  const f = b.factories;
  if (f !== undefined && f !== null) {
    if (!Array.isArray(f) || f.length === 0 || f.length > MAX_KEY_FACTORIES) {
      errors.push({
        pointer: '/factories',
        message: `factories must be a list of 1 to ${MAX_KEY_FACTORIES} factory names; leave it out for a key that reaches every factory`,
      });
    } else {
      f.forEach((name, i) => {
        if (typeof name !== 'string' || !RESOURCE_NAME_PATTERN.test(name)) {
          errors.push({ pointer: `/factories/${i}`, message: `${JSON.stringify(name) ?? String(name)} is not a factory name (lowercase letters, digits and -)` });
        }
      });
      factories = [...new Set(f as string[])].sort();
    }
    if (scopes.includes('admin')) {
      errors.push({ pointer: '/factories', message: 'an admin key manages every factory, so factories cannot limit it; leave admin out' });
    }
  }
  if (errors.length) throw invalidRequest(`The key is not valid: ${errors[0].message}.`, errors);
  return { scopes, factories };
}

function toKey(row: Row): ApiKey {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    scopes: JSON.parse(row.scopes) as Scope[],
    factories: row.factories === null ? null : (JSON.parse(row.factories) as string[]),
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
}
