import { createHash } from 'node:crypto';
import { conflict, invalidRequest, notFound, type FieldError } from '../../core/errors.ts';
import { newApiKey, newId, RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { iso } from '../clock.ts';
import type { StoreContext } from './index.ts';

export const SCOPES = ['runs', 'manage', 'admin'] as const;
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

const KEY_NAME = /^[^\x00-\x1f\x7f]{1,128}$/;

const hashKey = (raw: string): Buffer => createHash('sha256').update(raw, 'utf8').digest();

/** API keys (SPEC 5): only the sha256 of a raw key is stored; the raw key is returned once. */
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
      `SELECT id FROM api_keys WHERE revoked_at IS NULL AND EXISTS (SELECT 1 FROM json_each(scopes) WHERE value = 'admin')`,
    );
  }

  /** Creates a key. Returns its id and the raw key, which is never available again. */
  create(input: NewKey): { id: string; raw: string; key: ApiKey } {
    const factories = input.factories && input.factories.length > 0 ? [...new Set(input.factories)].sort() : null;
    const scopes = SCOPES.filter((s) => input.scopes.includes(s));
    const errors: FieldError[] = [];
    if (typeof input.name !== 'string' || !KEY_NAME.test(input.name)) {
      errors.push({ pointer: '/name', message: 'name must be 1 to 128 characters without control characters' });
    }
    if (!KEY_KINDS.includes(input.kind)) errors.push({ pointer: '/kind', message: 'kind must be personal or agent' });
    if (!Array.isArray(input.scopes) || input.scopes.length === 0 || input.scopes.some((s) => !SCOPES.includes(s))) {
      errors.push({ pointer: '/scopes', message: 'scopes must be a non-empty list of runs, manage and admin' });
    }
    if (factories) {
      factories.forEach((f, i) => {
        if (typeof f !== 'string' || !RESOURCE_NAME_PATTERN.test(f)) errors.push({ pointer: `/factories/${i}`, message: `"${f}" is not a factory name` });
      });
      if (!scopes.includes('manage')) errors.push({ pointer: '/factories', message: 'factories limit the manage scope, which this key does not have' });
    }
    if (errors.length) throw invalidRequest('The key is not valid.', errors);

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
    if (!key) throw notFound(`No API key has the id "${id}".`);
    if (key.revoked_at) return key;
    const admins = this.activeAdmins.all() as { id: string }[];
    if (key.scopes.includes('admin') && admins.length === 1 && admins[0].id === id) {
      throw conflict(`"${id}" is the last active admin key; create another admin key before revoking it.`);
    }
    this.setRevoked.run(iso(this.ctx.clock.now()), id);
    return this.get(id)!;
  }
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
