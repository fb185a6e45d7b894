import { conflict, invalidRequest, notFound, type FieldError } from '../../core/errors.ts';
import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { iso } from '../clock.ts';
import { open, seal, secretAad } from '../crypto.ts';
import type { StoreContext } from './index.ts';
import { CHANNELS } from './channels.ts';
import { echoed } from '../../core/text.ts';

export const SECRET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** Values are credentials and signing secrets, not files. */
export const SECRET_VALUE_MAX_BYTES = 65_536;

/** What the API shows of a secret: never its value (docs/runtime.md: values are write-only). */
export interface SecretMeta {
  name: string;
  /** 0 while the secret is pending (no value yet). */
  current_version: number;
  has_value: boolean;
  /**
   * The factories that may bind the secret (webhooks, environments, the management API), sorted;
   * null for a team-wide secret that every factory may use
   * (docs/runtime.md#which-factories-may-use-a-secret).
   */
  factories: string[] | null;
  created_at: string;
  updated_at: string;
}

/** A live webhook or an environment that binds a secret, and the factory it belongs to. */
export interface SecretUse {
  factory: string;
  what: string;
}

interface Row {
  name: string;
  current_version: number;
  factories: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'name, current_version, factories, created_at, updated_at';

/**
 * Team secrets (docs/runtime.md): versioned values sealed with AES-256-GCM under the master key.
 * `reveal` is for the runtime's own use (ingress verification, executor env, definitions
 * checks); no route may return what it gives.
 */
export class SecretStore {
  private readonly ctx: StoreContext;
  private readonly insertSecret;
  private readonly insertVersion;
  private readonly bumpVersion;
  private readonly byName;
  private readonly all;
  private readonly remove;
  private readonly sealedOf;
  private readonly users;
  private readonly setFactoriesOf;

  constructor(ctx: StoreContext) {
    this.ctx = ctx;
    const db = ctx.db;
    this.insertSecret = db.prepare('INSERT INTO secrets (name, current_version, factories, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
    this.insertVersion = db.prepare('INSERT INTO secret_versions (secret_name, version, sealed, created_at) VALUES (?, ?, ?, ?)');
    this.bumpVersion = db.prepare('UPDATE secrets SET current_version = ?, updated_at = ? WHERE name = ?');
    this.byName = db.prepare(`SELECT ${COLUMNS} FROM secrets WHERE name = ?`);
    this.all = db.prepare(`SELECT ${COLUMNS} FROM secrets ORDER BY name`);
    this.setFactoriesOf = db.prepare('UPDATE secrets SET factories = ?, updated_at = ? WHERE name = ?');
    this.remove = db.prepare('DELETE FROM secrets WHERE name = ?');
    this.sealedOf = db.prepare('SELECT sealed FROM secret_versions WHERE secret_name = ? AND version = ?');
    // Live webhooks (migration 002) and environments whose `env` names the secret ({secret: NAME}).
    this.users = db.prepare(
      ctx.dialect === 'postgres'
        ? `SELECT factory, what FROM (
             SELECT factory, 'webhook ' || factory || '/' || name AS what FROM webhooks WHERE secret_name = @name AND deleted_at IS NULL
             UNION ALL
             SELECT environments.factory, 'environment ' || environments.name FROM environments, jsonb_each(environments.spec::jsonb -> 'env') AS e
              WHERE jsonb_typeof(e.value) = 'object' AND e.value ->> 'secret' = @name) AS u
           ORDER BY what COLLATE "C"`
        : `SELECT factory, 'webhook ' || factory || '/' || name AS what FROM webhooks WHERE secret_name = @name AND deleted_at IS NULL
           UNION ALL
           SELECT environments.factory, 'environment ' || environments.name FROM environments, json_each(environments.spec, '$.env') AS e
            WHERE e.type = 'object' AND json_extract(e.value, '$.secret') = @name
           ORDER BY 2`,
    );
  }

  /**
   * Creates a secret with its first value, or pending (no value) when `value` is null. `factories`
   * limits which factories may bind it; null (the default) makes it team-wide.
   */
  create(name: string, value: string | null, factories: string[] | null = null): SecretMeta {
    checkName(name);
    if (value !== null) checkValue(value);
    const owners = factories === null ? null : checkFactories(factories);
    if (this.byName.get(name)) throw conflict(`A secret named "${name}" already exists; use update to set a new version.`);
    const now = iso(this.ctx.clock.now());
    this.ctx.db.transaction(() => {
      this.insertSecret.run(name, value === null ? 0 : 1, owners && JSON.stringify(owners), now, now);
      if (value !== null) this.insertVersion.run(name, 1, this.seal(name, 1, value), now);
    })();
    // A re-created name starts at version 1 again, which other replicas may hold under the old value.
    this.ctx.announce(CHANNELS.secrets);
    return this.get(name)!;
  }

  /** Sets a new value; the version goes up by one. Webhooks stay bound to the version they had. */
  update(name: string, value: string): SecretMeta {
    checkValue(value);
    const now = iso(this.ctx.clock.now());
    this.ctx.db.transaction(() => {
      const row = this.existing(name);
      const version = row.current_version + 1;
      this.insertVersion.run(name, version, this.seal(name, version, value), now);
      this.bumpVersion.run(version, now, name);
    })();
    return this.get(name)!;
  }

  get(name: string): SecretMeta | undefined {
    const row = this.byName.get(name) as Row | undefined;
    return row && toMeta(row);
  }

  list(): SecretMeta[] {
    return (this.all.all() as Row[]).map(toMeta);
  }

  /**
   * Replaces the list of factories that may bind the secret (null: every factory). A factory that
   * still binds it must stay on the list: taking it away would leave a webhook or an environment
   * holding a secret its factory may not use, so that is a 409 naming them.
   */
  setFactories(name: string, factories: string[] | null): SecretMeta {
    const owners = factories === null ? null : checkFactories(factories);
    return this.ctx.db.transaction(() => {
      this.existing(name);
      if (owners !== null) this.refuseLosingUsers(name, (f) => !owners.includes(f));
      this.setFactoriesOf.run(owners && JSON.stringify(owners), iso(this.ctx.clock.now()), name);
      return this.get(name)!;
    })();
  }

  /** Adds factories to a limited secret. A team-wide secret is a 409: every factory has it already. */
  grant(name: string, factories: string[]): SecretMeta {
    const added = checkFactories(factories);
    return this.ctx.db.transaction(() => {
      const current = this.limitedList(name, 'grant');
      return this.setFactories(name, [...new Set([...current, ...added])]);
    })();
  }

  /**
   * Takes factories off a limited secret. Refused (409) while one of them still binds it, and when
   * no factory would be left: delete the secret instead. Naming a factory not on the list is fine.
   */
  revoke(name: string, factories: string[]): SecretMeta {
    const removed = checkFactories(factories);
    return this.ctx.db.transaction(() => {
      const left = this.limitedList(name, 'revoke').filter((f) => !removed.includes(f));
      if (left.length === 0) {
        throw conflict(`Revoking would leave no factory that may use the secret "${name}"; grant another factory first, or delete the secret.`);
      }
      return this.setFactories(name, left);
    })();
  }

  /** The live webhooks and environments that bind the secret, with their factories. */
  uses(name: string): SecretUse[] {
    return this.users.all({ name }) as SecretUse[];
  }

  /**
   * Deletes a secret and all its versions. A secret that a live webhook or an environment still
   * uses is a 409 naming them: deleting it would silently break their deliveries or runs.
   */
  delete(name: string): void {
    this.existing(name);
    const users = this.uses(name).map((r) => r.what);
    if (users.length) {
      throw conflict(`The secret "${name}" is still used by ${users.join(', ')}; remove those uses (and apply) first.`);
    }
    this.remove.run(name);
    this.ctx.announce(CHANNELS.secrets);
  }

  /**
   * The plaintext of `version` (default: the current one), or undefined when the secret does not
   * exist or has no value yet. Runtime-internal: never send the result to a client.
   */
  reveal(name: string, version?: number): string | undefined {
    const row = this.byName.get(name) as Row | undefined;
    if (!row) return undefined;
    const v = version ?? row.current_version;
    if (v < 1) return undefined;
    const sealed = this.sealedOf.get(name, v) as { sealed: Buffer } | undefined;
    if (!sealed) return undefined;
    return open(this.ctx.masterKey, sealed.sealed, secretAad(name, v)).toString('utf8');
  }

  private existing(name: string): Row {
    const row = this.byName.get(name) as Row | undefined;
    if (!row) throw notFound(`No secret is named "${echoed(name)}".`);
    return row;
  }

  private limitedList(name: string, verb: 'grant' | 'revoke'): string[] {
    const row = this.existing(name);
    if (row.factories === null) {
      const what = verb === 'grant' ? 'granting a factory changes nothing' : 'there is no list to take a factory off';
      throw conflict(
        `The secret "${name}" is team-wide (every factory may use it), so ${what}; limit it to named factories with \`factory secret limit ${name} --factory NAME\`.`,
      );
    }
    return JSON.parse(row.factories) as string[];
  }

  private refuseLosingUsers(name: string, loses: (factory: string) => boolean): void {
    const lost = this.uses(name).filter((u) => loses(u.factory));
    if (lost.length) {
      throw conflict(
        `The secret "${name}" is still used by ${lost.map((u) => u.what).join(', ')}; remove those uses (and apply) before taking ${[...new Set(lost.map((u) => `"${u.factory}"`))].join(', ')} off its list.`,
      );
    }
  }

  private seal(name: string, version: number, value: string): Buffer {
    return seal(this.ctx.masterKey, Buffer.from(value, 'utf8'), secretAad(name, version));
  }
}

function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !SECRET_NAME_PATTERN.test(name)) {
    throw invalidRequest('The secret name is not valid.', [
      { pointer: '/name', message: `secret names match ${SECRET_NAME_PATTERN.source}, got ${JSON.stringify(name)}` },
    ]);
  }
}

function checkValue(value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalidRequest('The secret value must be a non-empty string.', [
      { pointer: '/value', message: 'must be a non-empty string (create the secret as pending to give it a value later)' },
    ]);
  }
  if (Buffer.byteLength(value, 'utf8') > SECRET_VALUE_MAX_BYTES) {
    throw invalidRequest('The secret value is too long.', [
      { pointer: '/value', message: `must be at most ${SECRET_VALUE_MAX_BYTES} bytes` },
    ]);
  }
}

/** A list of factory names (core/ids.ts pattern), non-empty, returned sorted without repeats. */
function checkFactories(factories: unknown): string[] {
  if (!Array.isArray(factories) || factories.length === 0) {
    throw invalidRequest('factories must be a non-empty list of factory names.', [
      { pointer: '/factories', message: 'must be a non-empty array of factory names (null, where allowed, means every factory)' },
    ]);
  }
  const errors: FieldError[] = [];
  factories.forEach((f, i) => {
    if (typeof f !== 'string' || !RESOURCE_NAME_PATTERN.test(f)) {
      errors.push({ pointer: `/factories/${i}`, message: `${JSON.stringify(f)} is not a factory name (${RESOURCE_NAME_PATTERN.source})` });
    }
  });
  if (errors.length) throw invalidRequest(`${errors.length === 1 ? 'A factory name is' : 'Factory names are'} not valid.`, errors);
  return [...new Set(factories as string[])].sort();
}

/** May `factory` bind this secret? */
export function secretAllows(meta: Pick<SecretMeta, 'factories'>, factory: string): boolean {
  return meta.factories === null || meta.factories.includes(factory);
}

function toMeta(row: Row): SecretMeta {
  return {
    name: row.name,
    current_version: row.current_version,
    has_value: row.current_version > 0,
    factories: row.factories === null ? null : (JSON.parse(row.factories) as string[]),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
