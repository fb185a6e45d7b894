import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../../../runtime/config.ts';
import { startServer, type RunningServer } from '../../../runtime/server.ts';
import { snapshotDigest } from '../../../runtime/definitions/checks.ts';
import type { Snapshot } from '../../../core/snapshot.ts';
import { runCliInProcess, terminalEnv, type CliResult } from '../../helpers/cli.ts';

/**
 * Issue 3's end-to-end test: the CLI (in-process through runCli, test/helpers/cli.ts) against a
 * real runtime on port 0.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const UID_TAKEN = 'wh_ownedbyfowner2345abcdefghi';

let server: RunningServer;
let tmp: string;
let apiKey: string;

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'factory-plan-apply-'));
  server = await startServer(parseConfig({ port: 0, dataDir: join(tmp, 'data'), logLevel: 'silent' }, {}, tmp));
  apiKey = readFileSync(server.adminKeyPath, 'utf8').trim();
});

after(async () => {
  await server?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** The CLI (in-process, test/helpers/cli.ts) as a user runs it: the key in FACTORY_API_KEY. */
function cli(args: string[], stdin = ''): Promise<CliResult> {
  return runCliInProcess(args, { cwd: tmp, env: terminalEnv({ FACTORY_SERVER: server.url, FACTORY_API_KEY: apiKey }), stdin });
}

/** Writes a small factory repo under tmp and returns its directory (relative to tmp). */
function writeRepo(name: string, files: Record<string, string>): string {
  const dir = join(tmp, 'repos', name);
  rmSync(dir, { recursive: true, force: true });
  for (const [path, text] of Object.entries({ 'factory.yaml': `name: ${name}\n`, ...files })) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return join('repos', name);
}

const ENV_YAML = 'agent:\n  command: ["true"]\n';

/** Everything definitions-related in the runtime, to show that a failed apply changed nothing. */
function dump(): string {
  const d = server.store.defs;
  return JSON.stringify([d.listFactories(), d.listWebhooks(undefined, { includeDeleted: true }), d.listAutomations(), d.listEnvironments()]);
}

const changed = (plan: { changes: { action: string }[] }) => plan.changes.filter((c) => c.action !== 'no-op');

test('secrets, apply, plan with no changes, edit, plan, apply, delete a webhook, apply', async () => {
  cpSync(join(ROOT, 'examples', 'factory'), join(tmp, 'example'), { recursive: true });
  const token = (c: string) => c.repeat(43);
  const created = await Promise.all([
    cli(['secret', 'create', 'ci-webhook-token'], token('c') + '\n'),
    cli(['secret', 'create', 'github-webhook-secret'], 'github signing secret\n'),
    cli(['secret', 'create', 'alerts-url-token'], token('a') + '\n'),
  ]);
  for (const r of created) assert.equal(r.code, 0, r.stderr);

  const first = await cli(['apply', 'example', '--revision', 'commit-1']);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /^Applied factory example at revision commit-1: 9 created/m);
  assert.ok(first.stdout.includes(`${server.url}/webhooks/w/wh_examplealerts2345abcdefghi/{token}`));
  assert.ok(first.stdout.includes(`${server.url}/webhooks/w/wh_examplecibuilds2345abcdefg\n`));
  assert.ok(!first.stdout.includes(token('a')), 'no secret value in the output');

  const same = await cli(['plan', 'example', '--detailed-exitcode']);
  assert.equal(same.code, 0, same.stderr);
  assert.match(same.stdout, /^No changes\. Factory example in the runtime matches the definitions in example \(revision commit-1, base revision \d+-[0-9a-f]+\)\.$/m);

  const ci = join(tmp, 'example', 'webhooks', 'ci.yaml');
  writeFileSync(ci, readFileSync(ci, 'utf8').replace('description: Build results from the CI system', 'description: Build results'));
  const edited = await cli(['plan', 'example', '--detailed-exitcode', '--json']);
  assert.equal(edited.code, 2, edited.stderr);
  assert.deepEqual(changed(JSON.parse(edited.stdout)), [{
    resource: 'webhook', name: 'ci', action: 'update', file: 'webhooks/ci.yaml',
    diff: [{ field: 'description', before: 'Build results from the CI system', after: 'Build results' }],
  }]);
  const second = await cli(['apply', 'example']);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /^Applied factory example.*0 created, 1 updated, 0 deleted/m);

  rmSync(join(tmp, 'example', 'webhooks', 'alerts.yaml'));
  const removed = await cli(['plan', 'example', '--detailed-exitcode', '--json']);
  assert.equal(removed.code, 2, removed.stderr);
  assert.deepEqual(changed(JSON.parse(removed.stdout)), [{ resource: 'webhook', name: 'alerts', action: 'delete', file: 'webhooks/alerts.yaml' }]);
  const third = await cli(['apply', 'example']);
  assert.equal(third.code, 0, third.stderr);

  const list = await cli(['webhook', 'list', '--factory', 'example', '--json']);
  assert.equal(list.code, 0, list.stderr);
  const hooks = JSON.parse(list.stdout) as { name: string; uid: string; secret_version: number }[];
  assert.deepEqual(hooks.map((w) => w.name), ['ci', 'github']);
  assert.ok(hooks.every((w) => w.secret_version === 1));
  assert.ok(server.store.defs.getWebhookByUid('wh_examplealerts2345abcdefghi')?.deletedAt, 'kept as deleted: the UID is never reused');
  // The label belongs to the apply that gave it: later applies without --revision clear it.
  assert.equal(server.store.defs.getFactory('example')?.revision, null);
});

test('a failing apply changes nothing and names the file and key', async () => {
  server.store.secrets.create('owner-token', 'o'.repeat(40));
  server.store.secrets.create('not-url-safe', 'has/slash+and=padding'.repeat(3));
  server.store.secrets.create('not-a-key', 'my plain secret!');
  const owner = writeRepo('f-owner', {
    'webhooks/hook.yaml': `secretName: owner-token\nuid: ${UID_TAKEN}\n`,
    'environments/shared-env.yaml': ENV_YAML,
  });
  const applied = await cli(['apply', owner]);
  assert.equal(applied.code, 0, applied.stderr);

  const cases: { name: string; files: Record<string, string>; code: string; where: RegExp }[] = [
    { name: 'f-missing', files: { 'webhooks/hook.yaml': 'authMode: token\nsecretName: nope\n' }, code: 'secret.not_found', where: /webhooks\/hook\.yaml:2:\d+: error secret\.not_found: .*'nope'/ },
    { name: 'f-unsafe', files: { 'webhooks/hook.yaml': 'authMode: url_token\nsecretName: not-url-safe\n' }, code: 'secret.not_url_safe', where: /webhooks\/hook\.yaml:2:\d+: error secret\.not_url_safe/ },
    { name: 'f-no-key', files: { 'webhooks/hook.yaml': 'authMode: signature\nsignatureScheme: standard-webhooks\nsecretName: not-a-key\n' }, code: 'secret.not_signing_key', where: /webhooks\/hook\.yaml:3:\d+: error secret\.not_signing_key: team secret 'not-a-key' cannot verify standard-webhooks signatures/ },
    { name: 'f-thief', files: { 'webhooks/hook.yaml': `secretName: owner-token\nuid: ${UID_TAKEN}\n` }, code: 'webhook.uid_taken', where: /webhooks\/hook\.yaml:2:\d+: error webhook\.uid_taken: .*f-owner/ },
    { name: 'f-squatter', files: { 'environments/shared-env.yaml': ENV_YAML }, code: 'environment.owned', where: /environments\/shared-env\.yaml:1:1: error environment\.owned: .*'f-owner'/ },
  ];
  for (const c of cases) {
    const dir = writeRepo(c.name, c.files);
    const before = dump();
    const r = await cli(['apply', dir]);
    assert.equal(r.code, 1, `${c.name}: ${r.stderr}`);
    assert.match(r.stderr, c.where, c.name);
    assert.ok(r.stderr.includes(`repos/${c.name}/`), `${c.name}: the file is shown as given`);
    assert.equal(dump(), before, `${c.name}: nothing changed`);
    // plan refuses the same way
    const p = await cli(['plan', dir, '--detailed-exitcode']);
    assert.equal(p.code, 1);
    assert.ok(p.stderr.includes(c.code));
  }
  assert.ok(!JSON.stringify(server.store.defs.listWebhooks()).includes('o'.repeat(40)));
});

test('21 webhooks: the CLI refuses offline, and the runtime refuses a snapshot sent without the CLI', async () => {
  const hooks = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`webhooks/h${String(i).padStart(2, '0')}.yaml`, 'secretName: owner-token\n']));
  const dir = writeRepo('f-many', hooks);
  const offline = await cli(['apply', dir]);
  assert.equal(offline.code, 1);
  assert.match(offline.stderr, /repos\/f-many\/webhooks\/h20\.yaml:1:1: error/);

  const body: Omit<Snapshot, 'digest'> = {
    format_version: 1,
    factory: { name: 'f-many', source: { file: 'factory.yaml' } },
    webhooks: Array.from({ length: 21 }, (_, i) => ({ name: `h${String(i).padStart(2, '0')}`, authMode: 'token' as const, secretName: 'owner-token', source: { file: `webhooks/h${String(i).padStart(2, '0')}.yaml` } })),
    automations: [],
    environments: [],
    sources: {},
  };
  const snapshot = { ...body, digest: snapshotDigest(body as Snapshot) };
  const before = dump();
  const res = await fetch(`${server.url}/api/v1/factories/f-many/apply`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ snapshot }),
  });
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  const problem = (await res.json()) as { code: string; errors: { file: string; pointer: string; code: string }[] };
  assert.equal(problem.code, 'invalid_request');
  assert.deepEqual(problem.errors.map((e) => [e.file, e.code]), [['webhooks/h20.yaml', 'webhook.limit_exceeded']]);
  assert.equal(dump(), before);
});

test('the runtime validates the snapshot itself: schema, digest and the factory in the URL', async () => {
  const post = (name: string, body: unknown) =>
    fetch(`${server.url}/api/v1/factories/${name}/plan`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { errors?: { file: string; pointer: string; code: string }[] } }));
  const body: Omit<Snapshot, 'digest'> = {
    format_version: 1,
    factory: { name: 'f-raw', source: { file: 'factory.yaml' } },
    webhooks: [{ name: 'x', authMode: 'token', secretName: 'bad name', source: { file: 'webhooks/x.yaml' } }],
    automations: [],
    environments: [],
    sources: {},
  };
  const invalid = await post('f-raw', { snapshot: { ...body, digest: snapshotDigest(body as Snapshot) } });
  assert.equal(invalid.status, 400);
  assert.deepEqual(invalid.body.errors!.map((e) => [e.file, e.pointer, e.code]), [['webhooks/x.yaml', '/secretName', 'snapshot.invalid']]);
  const ok = { ...body, webhooks: [{ ...body.webhooks[0], secretName: 'owner-token' }] };
  const tampered = await post('other-name', { snapshot: { ...ok, digest: snapshotDigest(body as Snapshot) } });
  assert.deepEqual(tampered.body.errors!.map((e) => e.code), ['snapshot.digest_mismatch', 'factory.name_mismatch']);
  const missing = await post('f-raw', {});
  assert.equal(missing.status, 400);
});

test('apply --plan applies what was planned, and refuses a plan made before another apply', async () => {
  const dir = writeRepo('f-planned', { 'environments/box.yaml': ENV_YAML });
  const planned = await cli(['plan', dir, '--out', 'planned.json']);
  assert.equal(planned.code, 0, planned.stderr);
  // A repo beside the plan would be ignored: refused as a usage error, nothing applied.
  const both = await cli(['apply', dir, '--plan', 'planned.json']);
  assert.equal(both.code, 2);
  assert.equal(both.stderr, 'error: give a factory repo or --plan <file>, not both: the plan planned.json already holds what it applies.\n');
  const ok = await cli(['apply', '--plan', 'planned.json', '--revision', 'abc123']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^Applied factory f-planned at revision abc123: 2 created/m);
  const again = await cli(['apply', dir]);
  assert.match(again.stdout, /^No changes\./);

  const stale = await cli(['plan', dir, '--out', 'stale.json']);
  assert.equal(stale.code, 0);
  writeFileSync(join(tmp, dir, 'factory.yaml'), 'name: f-planned\ndescription: changed since the plan\n');
  assert.equal((await cli(['apply', dir])).code, 0);
  const before = dump();
  const refused = await cli(['apply', '--plan', 'stale.json']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /plan\.stale/);
  assert.match(refused.stderr, /changed since this plan/);
  assert.equal(dump(), before);
});

test('apply --plan with a file that is no saved plan says so in one sentence, the snapshot without its factory included', async () => {
  const cases: [string, string][] = [
    ['{"base_revision":"x","snapshot":{}}', 'its snapshot names no factory'],
    ['{"base_revision":"x","snapshot":{"factory":null}}', 'its snapshot names no factory'],
    ['{"base_revision":"x","snapshot":{"factory":{"name":7}}}', 'its snapshot names no factory'],
    ['{"base_revision":"x","snapshot":"text"}', 'its snapshot names no factory'],
    ['{"snapshot":{"factory":{"name":"f"}}}', 'no snapshot or base_revision'],
  ];
  for (const [text, why] of cases) {
    writeFileSync(join(tmp, 'bad-plan.json'), text);
    const r = await cli(['apply', '--plan', 'bad-plan.json']);
    assert.deepEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr }, { code: 1, stdout: '', stderr: `error: ${join(tmp, 'bad-plan.json')} is not a saved plan (${why}); make it with \`factory plan --out\`.\n` }, text);
  }
});

test('a signature webhook whose secret is pending is created disabled, and enabled by the apply after the secret has a value', async () => {
  server.store.secrets.create('later', null);
  const dir = writeRepo('f-pending', { 'webhooks/gh.yaml': 'authMode: signature\nsignatureScheme: github\nsecretName: later\n' });
  const first = await cli(['apply', dir]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /created disabled/);
  assert.match(first.stdout, /gh {2}disabled/);
  server.store.secrets.update('later', 'now it has a value');
  const plan = await cli(['plan', dir, '--json']);
  const diff = changed(JSON.parse(plan.stdout))[0] as unknown as { diff: unknown };
  assert.deepEqual(diff.diff, [{ field: 'secret_version', before: null, after: 1 }, { field: 'enabled', before: false, after: true }]);
  const second = await cli(['apply', dir]);
  assert.match(second.stdout, /gh {2}enabled/);
});

test('webhook show finds a webhook by name or UID; an unknown one is an error', async () => {
  const byName = await cli(['webhook', 'show', 'hook', '--factory', 'f-owner', '--json']);
  assert.equal(byName.code, 0, byName.stderr);
  assert.equal(JSON.parse(byName.stdout).uid, UID_TAKEN);
  const byUid = await cli(['webhook', 'show', UID_TAKEN]);
  assert.match(byUid.stdout, /secret: +owner-token \(bound to version 1\)/);
  assert.equal((await cli(['webhook', 'show', 'wh_zzzzzzzzzzzzzzzzzzzzzzzzzz'])).code, 1);
});

test('plan and apply print the runtime errors sorted by file and line', async () => {
  const dir = writeRepo('f-sorted', {
    'environments/sandbox.yaml': 'agent:\n  command: ["true"]\nenv:\n  TOKEN: {secret: no-such-env-secret}\n',
    'webhooks/zeta.yaml': 'secretName: no-such-zeta-secret\n',
    'webhooks/alpha.yaml': 'description: first\nsecretName: no-such-alpha-secret\n',
  });
  for (const command of ['plan', 'apply']) {
    const r = await cli([command, dir]);
    assert.equal(r.code, 1, r.stderr);
    const placed = r.stderr.split('\n').filter((l) => l.includes(': error secret.not_found:')).map((l) => l.split(': error')[0]);
    assert.deepEqual(placed, [
      'repos/f-sorted/environments/sandbox.yaml:4:19',
      'repos/f-sorted/webhooks/alpha.yaml:2:13',
      'repos/f-sorted/webhooks/zeta.yaml:1:13',
    ], `${command}: ${r.stderr}`);
  }
});
