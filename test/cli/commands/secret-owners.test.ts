import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startTestRuntime, type TestRuntime } from '../../runtime/helpers.ts';
import { runCliInProcess, terminalEnv, type CliResult } from '../../helpers/cli.ts';

/**
 * Secrets with an owner through the CLI (in-process, test/helpers/cli.ts) against a real
 * runtime: `secret create --factory`, `list`, `grant`, `revoke`, `limit`, and what plan, apply and
 * a factory-limited key's `webhook create|rotate` are refused (docs/runtime.md#which-factories-may-use-a-secret).
 */

let rt: TestRuntime;
before(async () => {
  rt = await startTestRuntime();
});
after(() => rt.stop());

/** The CLI in the data dir, with the admin key unless another is given. */
function factory(args: string[], options: { stdin?: string; key?: string } = {}): Promise<CliResult> {
  const env = terminalEnv({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: options.key ?? rt.adminKey });
  return runCliInProcess(args, { cwd: rt.dataDir, env, stdin: options.stdin });
}

/** Writes a factory repo under the data dir; returns its path relative to it (the CLI's cwd). */
function writeRepo(name: string, files: Record<string, string>): string {
  for (const [path, text] of Object.entries({ 'factory.yaml': `name: ${name}\n`, ...files })) {
    const file = join(rt.dataDir, 'repos', name, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return join('repos', name);
}

const ok = (r: CliResult) => assert.equal(r.code, 0, r.stderr);

test('create --factory, list shows who may use each secret, grant, revoke, limit and --all', async () => {
  ok(await factory(['secret', 'create', 'pay-token', '--factory', 'shop', '--factory', 'pay'], { stdin: 'pay-value\n' }));
  const pending = await factory(['secret', 'create', 'ops-pending', '--pending', '--factory', 'ops']);
  ok(pending);
  assert.equal(pending.stdout, 'created secret ops-pending (pending: no value yet; only factory ops may use it)\n');
  const team = await factory(['secret', 'create', 'team-token'], { stdin: 'team-value' });
  assert.equal(team.stdout, 'created secret team-token (version 1)\n');

  const table = await factory(['secret', 'list']);
  ok(table);
  const rows = table.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/).slice(0, 4));
  assert.deepEqual(rows, [
    ['NAME', 'VERSION', 'VALUE', 'FACTORIES'],
    ['ops-pending', '0', 'pending', 'ops'],
    ['pay-token', '1', 'set', 'pay,shop'],
    ['team-token', '1', 'set', 'all'],
  ]);
  const json = JSON.parse((await factory(['secret', 'list', '--json'])).stdout) as { name: string; factories: string[] | null }[];
  assert.deepEqual(json.map((s) => [s.name, s.factories]), [['ops-pending', ['ops']], ['pay-token', ['pay', 'shop']], ['team-token', null]]);

  const granted = await factory(['secret', 'grant', 'pay-token', '--factory', 'blog']);
  assert.equal(granted.stdout, 'secret pay-token may be used by: blog, pay, shop\n');
  assert.equal((await factory(['secret', 'revoke', 'pay-token', '--factory', 'shop', '--factory', 'pay'])).stdout, 'secret pay-token may be used by: blog\n');
  const last = await factory(['secret', 'revoke', 'pay-token', '--factory', 'blog']);
  assert.equal(last.code, 1);
  assert.match(last.stderr, /^error: Revoking would leave no factory that may use the secret "pay-token"; grant another factory first, or delete the secret\.\n$/);
  assert.deepEqual(rt.store.secrets.get('pay-token')!.factories, ['blog'], 'the refused revoke changed nothing');

  const teamGrant = await factory(['secret', 'grant', 'team-token', '--factory', 'shop']);
  assert.equal(teamGrant.code, 1);
  assert.match(teamGrant.stderr, /team-wide .*`factory secret limit team-token --factory NAME`/);
  assert.equal(rt.store.secrets.get('team-token')!.factories, null, 'the refused grant changed nothing');
  assert.equal((await factory(['secret', 'limit', 'team-token', '--factory', 'shop', '--factory', 'blog'])).stdout, 'secret team-token may be used by: blog, shop\n');
  assert.equal((await factory(['secret', 'grant', 'team-token', '--all'])).stdout, 'secret team-token may be used by: every factory\n');
  assert.equal(rt.store.secrets.get('team-token')!.factories, null);
});

test('bad factory names and missing flags: one-line errors, exit 1 for the runtime\'s refusal, 2 for usage', async () => {
  const bad = await factory(['secret', 'create', 'bad-owner', '--factory', 'Not_A_Factory'], { stdin: 'v' });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^error: A factory name is not valid\.\n.*\/factories\/0.*"Not_A_Factory" is not a factory name/);
  assert.ok(!bad.stderr.includes('    at '), 'no stack trace');
  assert.equal(rt.store.secrets.get('bad-owner'), undefined);

  for (const args of [
    ['secret', 'grant', 'team-token'],
    ['secret', 'grant', 'team-token', '--all', '--factory', 'shop'],
    ['secret', 'revoke', 'team-token'],
    ['secret', 'limit', 'team-token'],
  ]) {
    const r = await factory(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
  }
  const unknown = await factory(['secret', 'grant', 'no-such-secret', '--factory', 'shop']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /No secret is named "no-such-secret"/);
});

test('plan and apply name the file and the secret a factory may not use; another factory\'s environment is refused before the runtime', async () => {
  ok(await factory(['secret', 'create', 'shop-token', '--factory', 'shop'], { stdin: 's'.repeat(40) }));
  const shop = writeRepo('shop', {
    'webhooks/hook.yaml': 'secretName: shop-token\n',
    'environments/agent.yaml': 'agent:\n  command: ["true"]\nenv:\n  TOKEN:\n    secret: shop-token\n',
  });
  ok(await factory(['apply', shop]));

  // Borrowing another factory's environment is refused by the compiler already (the repo does not
  // define it); the runtime's own refusal of it, environment.not_owned, is for snapshots from elsewhere.
  const borrow = writeRepo('borrower', {
    'automations/borrow.md': '---\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [wh_borrowborrowborrowborrowbo]\nenvironment: agent\n---\nBorrow it.\n',
  });
  for (const verb of ['plan', 'apply']) {
    const r = await factory([verb, borrow]);
    assert.equal(r.code, 1, `${verb}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /repos\/borrower\/automations\/borrow\.md:\d+:\d+: error automation\.unknown_environment: environment 'agent' is not defined in this repo/);
  }
  assert.equal(rt.store.defs.getFactory('borrower'), undefined, 'nothing applied');

  const evil = writeRepo('evil', {
    'webhooks/hook.yaml': 'authMode: token\nsecretName: shop-token\n',
    'environments/steal.yaml': 'agent:\n  command: ["true"]\nenv:\n  T:\n    secret: shop-token\n',
  });
  for (const verb of ['plan', 'apply']) {
    const r = await factory([verb, evil]);
    assert.equal(r.code, 1, `${verb}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /repos\/evil\/webhooks\/hook\.yaml:2:\d+: error secret\.not_allowed: team secret 'shop-token' may not be used by factory 'evil'; an admin can allow it with: factory secret grant shop-token --factory evil/);
    assert.match(r.stderr, /repos\/evil\/environments\/steal\.yaml:\d+:\d+: error secret\.not_allowed: team secret 'shop-token'/);
  }
  assert.equal(rt.store.defs.getFactory('evil'), undefined, 'nothing applied');

  // Granted, the secret binds; while evil binds it, evil cannot be taken off its list.
  ok(await factory(['secret', 'grant', 'shop-token', '--factory', 'evil']));
  const own = writeRepo('evil', { 'automations/borrow.md': '---\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [wh_borrowborrowborrowborrowbo]\nenvironment: steal\n---\nUse my own.\n' });
  ok(await factory(['apply', own]));
  const revoke = await factory(['secret', 'revoke', 'shop-token', '--factory', 'evil']);
  assert.equal(revoke.code, 1);
  assert.match(revoke.stderr, /^error: The secret "shop-token" is still used by environment steal, webhook evil\/hook; remove those uses \(and apply\) before taking "evil" off its list\.\n$/);
  assert.ok(rt.store.secrets.get('shop-token')!.factories!.includes('evil'), 'the refused revoke changed nothing');
});

test('a factory-limited key: its own new secret is fine; another factory\'s secret value is never overwritten', async () => {
  const key = (await factory(['key', 'create', '--name', 'intruder', '--kind', 'agent', '--scope', 'manage', '--factory', 'intruder'])).stdout.trim();
  assert.match(key, /^fk_/);
  ok(await factory(['secret', 'create', 'victim-signing'], { stdin: 'victim-value' }));

  const mine = await factory(['webhook', 'create', 'mine', '--factory', 'intruder', '--json'], { key });
  ok(mine);
  const created = JSON.parse(mine.stdout) as { webhook: { uid: string } };
  assert.deepEqual(rt.store.secrets.get('intruder-mine-secret')!.factories, ['intruder']);
  ok(await factory(['webhook', 'rotate', created.webhook.uid], { key }));

  const overwrite = await factory(
    ['webhook', 'create', 'steal', '--factory', 'intruder', '--auth-mode', 'signature', '--scheme', 'github', '--secret-name', 'victim-signing', '--secret-stdin'],
    { key, stdin: 'attacker-value' },
  );
  assert.equal(overwrite.code, 1);
  assert.match(overwrite.stderr, /^error: This API key is limited to named factories and may not change the value of the team secret "victim-signing"/);
  const bind = await factory(['webhook', 'create', 'bind', '--factory', 'intruder', '--auth-mode', 'signature', '--scheme', 'github', '--secret-name', 'victim-signing', '--json'], { key });
  ok(bind);
  const uid = (JSON.parse(bind.stdout) as { webhook: { uid: string } }).webhook.uid;
  const rotate = await factory(['webhook', 'set-secret', uid], { key, stdin: 'attacker-value' });
  assert.equal(rotate.code, 1);
  assert.match(rotate.stderr, /may not change the value of the team secret "victim-signing"/);
  assert.equal(rt.store.secrets.get('victim-signing')!.current_version, 1);
  assert.equal(rt.store.secrets.reveal('victim-signing'), 'victim-value');
});
