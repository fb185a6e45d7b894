import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FactoryError } from '../../../core/errors.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import type { Store } from '../../../runtime/store/index.ts';
import type { SqliteDB } from '../../../runtime/store/db.ts';
import { forEachEngine, type TestDatabase } from '../../helpers/postgres.ts';

function withStore(db: TestDatabase, fn: (store: Store, db: TestDatabase, clock: FakeClock) => void) {
  const clock = new FakeClock('2026-03-01T10:00:00Z');
  fn(db.open({ clock }), db, clock);
}

forEachEngine('create returns the raw key once; only its hash is stored', (_t, db) =>
  withStore(db, (store) => {
    const { id, raw, key } = store.keys.create({ name: 'alice', kind: 'personal', scopes: ['manage', 'runs'], factories: ['payments'] });
    assert.match(id, /^key_[a-z2-7]{26}$/);
    assert.match(raw, /^fk_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(key, {
      id,
      name: 'alice',
      kind: 'personal',
      scopes: ['runs', 'manage'],
      factories: ['payments'],
      created_at: '2026-03-01T10:00:00.000Z',
      revoked_at: null,
    });
    assert.ok(!JSON.stringify(store.keys.list()).includes(raw));
    // The database file is read on SQLite only: PostgreSQL's files are the server's.
    if (db.engine === 'sqlite') {
      (store.db as SqliteDB).pragma('wal_checkpoint(TRUNCATE)');
      assert.ok(!readFileSync(db.where).includes(Buffer.from(raw)), 'the raw key is not in the database file');
    }
    assert.equal(store.keys.findByRaw(raw)?.id, id);
    assert.equal(store.keys.findByRaw(raw + 'x'), undefined);
    assert.equal(store.keys.findByRaw('fk_' + 'A'.repeat(43)), undefined);
  }));

forEachEngine('revoke is immediate and idempotent; the last admin key cannot be revoked', (_t, db) =>
  withStore(db, (store, _db, clock) => {
    const admin = store.keys.create({ name: 'admin', kind: 'personal', scopes: ['admin'] });
    const ci = store.keys.create({ name: 'ci', kind: 'agent', scopes: ['runs'] });
    clock.advance(1000);
    const revoked = store.keys.revoke(ci.id);
    assert.equal(revoked.revoked_at, '2026-03-01T10:00:01.000Z');
    assert.equal(store.keys.findByRaw(ci.raw)?.revoked_at, '2026-03-01T10:00:01.000Z');
    clock.advance(1000);
    assert.equal(store.keys.revoke(ci.id).revoked_at, '2026-03-01T10:00:01.000Z');
    assert.throws(() => store.keys.revoke(admin.id), (e: unknown) => e instanceof FactoryError && e.code === 'conflict');
    store.keys.create({ name: 'admin2', kind: 'personal', scopes: ['admin'] });
    store.keys.revoke(admin.id);
    assert.throws(() => store.keys.revoke('key_nope'), (e: unknown) => e instanceof FactoryError && e.code === 'resource_not_found');
    assert.equal(store.keys.count(), 3);
  }));

forEachEngine('invalid keys are 400s with a pointer per problem', (_t, db) =>
  withStore(db, (store) => {
    const bad = (input: Parameters<typeof store.keys.create>[0]) => {
      try {
        store.keys.create(input);
      } catch (e) {
        assert.ok(e instanceof FactoryError && e.code === 'invalid_request');
        return e.errors!.map((x) => x.pointer);
      }
      assert.fail('expected an error');
    };
    assert.deepEqual(bad({ name: '', kind: 'robot' as never, scopes: [] }), ['/name', '/kind', '/scopes']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['everything' as never] }), ['/scopes']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['manage'], factories: ['Not A Name'] }), ['/factories/0']);
    // An empty list would be a manage key for no factory; it used to mean every factory.
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['manage'], factories: [] }), ['/factories']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['manage'], factories: ['ok', 'Not A Name', 'a'] }), ['/factories/1']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: { length: 3 } as never, factories: { length: 3 } as never }), ['/scopes', '/factories']);
  }));
