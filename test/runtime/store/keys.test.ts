import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FactoryError } from '../../../core/errors.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { openStore } from '../../../runtime/store/index.ts';

function withStore(fn: (store: ReturnType<typeof openStore>, path: string, clock: FakeClock) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'factory-keys-'));
  const clock = new FakeClock('2026-03-01T10:00:00Z');
  const store = openStore({ path: join(dir, 'f.db'), clock, masterKey: randomBytes(32) });
  try {
    fn(store, join(dir, 'f.db'), clock);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('create returns the raw key once; only its hash is stored', () =>
  withStore((store, path) => {
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
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    assert.ok(!readFileSync(path).includes(Buffer.from(raw)), 'the raw key is not in the database file');
    assert.equal(store.keys.findByRaw(raw)?.id, id);
    assert.equal(store.keys.findByRaw(raw + 'x'), undefined);
    assert.equal(store.keys.findByRaw('fk_' + 'A'.repeat(43)), undefined);
  }));

test('revoke is immediate and idempotent; the last admin key cannot be revoked', () =>
  withStore((store, _path, clock) => {
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

test('invalid keys are 400s with a pointer per problem', () =>
  withStore((store) => {
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
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['runs'], factories: ['ok'] }), ['/factories']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['manage'], factories: ['Not A Name'] }), ['/factories/0']);
    // An empty list would be a manage key for no factory; it used to mean every factory.
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['manage'], factories: [] }), ['/factories']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: ['manage'], factories: ['ok', 'Not A Name', 'a'] }), ['/factories/1']);
    assert.deepEqual(bad({ name: 'x', kind: 'agent', scopes: { length: 3 } as never, factories: { length: 3 } as never }), ['/scopes', '/factories']);
  }));
