import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { FactoryError } from '../../../core/errors.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import type { SqliteDB } from '../../../runtime/store/db.ts';
import { forEachEngine } from '../../helpers/postgres.ts';

const code = (c: string) => (e: unknown) => e instanceof FactoryError && e.code === c;

forEachEngine('secrets: versions, pending, reveal, metadata without values, reopen with the same key', (_t, db) => {
  const clock = new FakeClock('2026-03-01T10:00:00Z');
  {
    let store = db.open({ clock });
    const v1 = 'first-VALUE-7c1e\n  with spaces ';
    assert.deepEqual(store.secrets.create('gh.signing_1', v1), {
      name: 'gh.signing_1',
      current_version: 1,
      has_value: true,
      factories: null,
      created_at: '2026-03-01T10:00:00.000Z',
      updated_at: '2026-03-01T10:00:00.000Z',
    });
    clock.advance(5000);
    assert.equal(store.secrets.update('gh.signing_1', 'second-VALUE-9a2f').current_version, 2);
    assert.equal(store.secrets.reveal('gh.signing_1'), 'second-VALUE-9a2f');
    assert.equal(store.secrets.reveal('gh.signing_1', 1), v1);
    assert.equal(store.secrets.reveal('gh.signing_1', 3), undefined);
    assert.equal(store.secrets.reveal('nope'), undefined);

    const pending = store.secrets.create('paddle', null);
    assert.deepEqual([pending.current_version, pending.has_value], [0, false]);
    assert.equal(store.secrets.reveal('paddle'), undefined);
    assert.equal(store.secrets.update('paddle', 'now-set').current_version, 1);

    assert.deepEqual(store.secrets.list().map((s) => s.name), ['gh.signing_1', 'paddle']);
    assert.ok(!JSON.stringify(store.secrets.list()).includes('VALUE'));

    assert.throws(() => store.secrets.create('paddle', 'x'), code('conflict'));
    assert.throws(() => store.secrets.update('missing', 'x'), code('resource_not_found'));
    assert.throws(() => store.secrets.create('-bad', 'x'), code('invalid_request'));
    assert.throws(() => store.secrets.create('a'.repeat(129), 'x'), code('invalid_request'));
    assert.throws(() => store.secrets.create('ok', ''), code('invalid_request'));
    assert.throws(() => store.secrets.create('big', 'x'.repeat(65_537)), code('invalid_request'));

    // The database files are read on SQLite only: PostgreSQL's files are the server's.
    if (db.engine === 'sqlite') {
      (store.db as SqliteDB).pragma('wal_checkpoint(TRUNCATE)');
      for (const f of [db.where, db.where + '-wal']) {
        if (!existsSync(f)) continue;
        const bytes = readFileSync(f);
        for (const v of ['first-VALUE-7c1e', 'second-VALUE-9a2f', 'now-set']) assert.ok(!bytes.includes(Buffer.from(v)), `${v} in ${f}`);
      }
    }

    store.close();
    store = db.open({ clock });
    assert.equal(store.secrets.reveal('gh.signing_1'), 'second-VALUE-9a2f');
    store.secrets.delete('gh.signing_1');
    assert.equal(store.secrets.get('gh.signing_1'), undefined);
    assert.throws(() => store.secrets.delete('gh.signing_1'), code('resource_not_found'));
    store.close();
  }
});

forEachEngine('a sealed value moved onto another secret does not open (AAD binds name and version)', (_t, db) => {
  const store = db.open({ clock: new FakeClock() });
  {
    store.secrets.create('a', 'value-a');
    store.secrets.create('b', 'value-b');
    store.db.prepare(`UPDATE secret_versions SET sealed = (SELECT sealed FROM secret_versions WHERE secret_name = 'a') WHERE secret_name = 'b'`).run();
    assert.throws(() => store.secrets.reveal('b'), code('internal_error'));
  }
});

forEachEngine('a secret used by a live webhook or an environment cannot be deleted (409 naming them)', (_t, db) => {
  const store = db.open({ clock: new FakeClock() });
  {
    store.secrets.create('hook', 'v');
    store.secrets.create('envsecret', 'v');
    store.secrets.create('free', 'v');
    const now = '2026-01-01T00:00:00.000Z';
    store.db.prepare(`INSERT INTO factories (name, managed_by, created_at) VALUES ('pay', 'definitions', ?)`).run(now);
    const hook = store.db.prepare(
      `INSERT INTO webhooks (uid, factory, name, auth_mode, secret_name, secret_version, enabled, managed_by, created_at, updated_at, deleted_at)
       VALUES (?, 'pay', ?, 'token', ?, 1, 1, 'definitions', ?, ?, ?)`,
    );
    hook.run('wh_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'gh', 'hook', now, now, null);
    hook.run('wh_bbbbbbbbbbbbbbbbbbbbbbbbbb', 'old', 'free', now, now, now); // deleted: does not count
    store.db
      .prepare(`INSERT INTO environments (name, factory, spec, created_at, updated_at) VALUES ('ci', 'pay', ?, ?, ?)`)
      .run(JSON.stringify({ name: 'ci', env: { PLAIN: 'x', TOKEN: { secret: 'envsecret' } } }), now, now);

    assert.throws(() => store.secrets.delete('hook'), (e: unknown) => e instanceof FactoryError && e.code === 'conflict' && /webhook pay\/gh/.test(e.message));
    assert.throws(() => store.secrets.delete('envsecret'), (e: unknown) => e instanceof FactoryError && e.code === 'conflict' && /environment ci/.test(e.message));
    store.secrets.delete('free');
    assert.equal(store.secrets.get('free'), undefined);
  }
});

forEachEngine('which factories may use a secret: create limited, grant, revoke, limit, team-wide; bad names and lists refused', (_t, db) => {
  const clock = new FakeClock('2026-03-01T10:00:00Z');
  {
    let store = db.open({ clock });
    assert.deepEqual(store.secrets.create('pay-token', 'v', ['shop', 'pay', 'shop']).factories, ['pay', 'shop'], 'sorted, without repeats');
    assert.equal(store.secrets.create('team', 'v').factories, null, 'team-wide by default');

    clock.advance(1000);
    const granted = store.secrets.grant('pay-token', ['blog']);
    assert.deepEqual(granted.factories, ['blog', 'pay', 'shop']);
    assert.equal(granted.updated_at, '2026-03-01T10:00:01.000Z');
    assert.equal(granted.current_version, 1, 'the value is untouched');
    assert.deepEqual(store.secrets.grant('pay-token', ['blog']).factories, ['blog', 'pay', 'shop'], 'granting twice changes nothing');
    assert.deepEqual(store.secrets.revoke('pay-token', ['shop', 'never-listed']).factories, ['blog', 'pay']);
    assert.throws(() => store.secrets.revoke('pay-token', ['blog', 'pay']), (e: unknown) => e instanceof FactoryError && e.code === 'conflict' && /leave no factory/.test(e.message));
    assert.deepEqual(store.secrets.get('pay-token')!.factories, ['blog', 'pay'], 'a refused revoke changes nothing');

    // Team-wide: grant and revoke have no list to change; limit sets one, null makes it team-wide again.
    assert.throws(() => store.secrets.grant('team', ['shop']), (e: unknown) => e instanceof FactoryError && e.code === 'conflict' && /team-wide.*factory secret limit team/.test(e.message));
    assert.throws(() => store.secrets.revoke('team', ['shop']), code('conflict'));
    assert.deepEqual(store.secrets.setFactories('team', ['ops']).factories, ['ops']);
    assert.equal(store.secrets.setFactories('team', null).factories, null);

    for (const bad of [[], ['Bad Name'], ['ok', 42], 'shop', [''], ['-x']]) {
      assert.throws(() => store.secrets.grant('pay-token', bad as string[]), code('invalid_request'), JSON.stringify(bad));
      assert.throws(() => store.secrets.create('never', 'v', bad as string[]), code('invalid_request'), JSON.stringify(bad));
    }
    assert.equal(store.secrets.get('never'), undefined);
    const invalid = (() => {
      try {
        store.secrets.setFactories('pay-token', ['ok', 'NOT OK']);
      } catch (e) {
        return e as FactoryError;
      }
    })();
    assert.deepEqual(invalid?.errors?.map((e) => e.pointer), ['/factories/1']);
    assert.throws(() => store.secrets.grant('missing', ['shop']), code('resource_not_found'));

    store.close();
    store = db.open({ clock });
    assert.deepEqual(store.secrets.list().map((s) => [s.name, s.factories]), [['pay-token', ['blog', 'pay']], ['team', null]], 'kept across a reopen');
    store.close();
  }
});

forEachEngine('a factory that still binds a secret cannot be taken off its list (409 naming the uses)', (_t, db) => {
  const store = db.open({ clock: new FakeClock() });
  {
    store.secrets.create('hook', 'v', ['pay', 'shop']);
    store.secrets.create('envsecret', 'v', ['pay', 'shop']);
    const now = '2026-01-01T00:00:00.000Z';
    store.db.prepare(`INSERT INTO factories (name, managed_by, created_at) VALUES ('pay', 'definitions', ?)`).run(now);
    store.db
      .prepare(
        `INSERT INTO webhooks (uid, factory, name, auth_mode, secret_name, secret_version, enabled, managed_by, created_at, updated_at)
         VALUES ('wh_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'pay', 'gh', 'token', 'hook', 1, 1, 'definitions', ?, ?)`,
      )
      .run(now, now);
    store.db
      .prepare(`INSERT INTO environments (name, factory, spec, created_at, updated_at) VALUES ('ci', 'pay', ?, ?, ?)`)
      .run(JSON.stringify({ name: 'ci', env: { TOKEN: { secret: 'envsecret' } } }), now, now);

    assert.deepEqual(store.secrets.uses('hook'), [{ factory: 'pay', what: 'webhook pay/gh' }]);
    const used = (e: unknown) => e instanceof FactoryError && e.code === 'conflict' && /still used by webhook pay\/gh.*"pay"/.test(e.message);
    assert.throws(() => store.secrets.revoke('hook', ['pay']), used);
    assert.throws(() => store.secrets.setFactories('hook', ['shop']), used);
    assert.throws(() => store.secrets.revoke('envsecret', ['pay']), (e: unknown) => e instanceof FactoryError && /environment ci/.test(e.message));
    // Another factory that binds nothing can go; widening to every factory is always fine.
    assert.deepEqual(store.secrets.revoke('hook', ['shop']).factories, ['pay']);
    assert.equal(store.secrets.setFactories('envsecret', null).factories, null);
  }
});
