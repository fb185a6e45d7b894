import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { sign } from '@octokit/webhooks-methods';
import { runCli } from '../../../cli/main.ts';
import type { CliIO } from '../../../cli/io.ts';
import { startTestRuntime, type TestRuntime } from '../../runtime/helpers.ts';

/** `factory webhook create|enable|disable|rotate|delete|set-secret` in-process against a real runtime. */

let rt: TestRuntime;
before(async () => (rt = await startTestRuntime()));
after(() => rt.stop());

async function cli(args: string[], stdin?: string | Buffer) {
  const io = {
    out: '',
    err: '',
    stdout: (s: string) => void (io.out += s),
    stderr: (s: string) => void (io.err += s),
    env: { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey },
    cwd: rt.dataDir,
    stdin: Readable.from(stdin === undefined ? [] : [Buffer.from(stdin)]),
    stdinIsTTY: stdin === undefined,
    stdoutIsTTY: false,
  } satisfies CliIO & { out: string; err: string };
  const code = await runCli(args, io);
  return { code, out: io.out, err: io.err };
}

test('create shows a generated token once; enable, disable, rotate and delete follow docs/ingress.md#webhook-lifecycle', async () => {
  const created = await cli(['webhook', 'create', 'deploys', '--factory', 'ops', '--json']);
  assert.equal(created.code, 0, created.err);
  const answer = JSON.parse(created.out) as { webhook: { uid: string; url: string }; secret: string };
  assert.match(answer.secret, /^[A-Za-z0-9_-]{43}$/);
  const post = (secret: string) => fetch(answer.webhook.url, { method: 'POST', headers: { Authorization: `Bearer ${secret}` }, body: '{}' });
  assert.equal((await post(answer.secret)).status, 202);

  const text = await cli(['webhook', 'create', 'builds', '--factory', 'ops']);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /Bearer token: \S{43}\n\s+Save it now: it is not shown again\./);

  assert.equal((await cli(['webhook', 'disable', 'deploys'])).code, 0);
  assert.equal((await post(answer.secret)).status, 404);
  const enabled = await cli(['webhook', 'enable', answer.webhook.uid]);
  assert.equal(enabled.code, 0, enabled.err);
  assert.match(enabled.out, /Enabled webhook deploys/);

  const rotated = await cli(['webhook', 'rotate', 'deploys', '--factory', 'ops', '--json']);
  assert.equal(rotated.code, 0, rotated.err);
  const fresh = (JSON.parse(rotated.out) as { secret: string }).secret;
  assert.equal((await post(answer.secret)).status, 401);
  assert.equal((await post(fresh)).status, 202);

  assert.equal((await cli(['webhook', 'delete', 'deploys'])).code, 0);
  assert.equal((await post(fresh)).status, 404);
  const gone = await cli(['webhook', 'enable', answer.webhook.uid]);
  assert.equal(gone.code, 1);
  assert.match(gone.err, /^error: /);
});

test('the two-step provider flow takes the secret from stdin, never argv', async () => {
  const created = await cli(['webhook', 'create', 'gh', '--factory', 'prov', '--auth-mode', 'signature', '--scheme', 'github']);
  assert.equal(created.code, 0, created.err);
  assert.match(created.out, /state:\s+disabled/);
  assert.match(created.out, /Next: .*set-secret/);
  const url = /url:\s+(\S+)/.exec(created.out)![1];
  const body = '{"action":"opened"}';
  assert.equal((await fetch(url, { method: 'POST', body, headers: { 'X-Hub-Signature-256': await sign('from-github', body) } })).status, 404);

  const noStdin = await cli(['webhook', 'set-secret', 'gh']);
  assert.equal(noStdin.code, 2);
  const set = await cli(['webhook', 'set-secret', 'gh'], 'from-github\n');
  assert.equal(set.code, 0, set.err);
  assert.ok(!set.out.includes('from-github'));
  assert.equal((await fetch(url, { method: 'POST', body, headers: { 'X-Hub-Signature-256': await sign('from-github', body) } })).status, 202);

  const piped = await cli(['webhook', 'create', 'gh2', '--factory', 'prov', '--auth-mode', 'signature', '--scheme', 'github', '--secret-stdin'], 'given\n');
  assert.equal(piped.code, 0, piped.err);
  assert.match(piped.out, /state:\s+enabled/);
  assert.ok(!piped.out.includes('given'));
});

test('a definitions-managed webhook refuses rotate with the instruction to use factory secret update', async () => {
  rt.store.defs.createFactory('defs', 'definitions');
  rt.store.secrets.create('defs-ci', 'v1');
  rt.store.defs.insertWebhook({ factory: 'defs', name: 'ci', authMode: 'token', secretName: 'defs-ci', secretVersion: 1, enabled: true, managedBy: 'definitions' });
  const res = await cli(['webhook', 'rotate', 'ci', '--factory', 'defs']);
  assert.equal(res.code, 1);
  assert.match(res.err, /factory secret update defs-ci/);
});

test('a provider secret on stdin that is not UTF-8 is refused, as secret update refuses it, and nothing changes', async () => {
  const bad = Buffer.concat([Buffer.from('pdl_ntfset_'), Buffer.from([0xff, 0xfe]), Buffer.from('abc\n')]);
  const refused = { code: 1, out: '', err: 'error: the value from stdin is not valid UTF-8 text.\n' };

  assert.deepEqual(await cli(['webhook', 'create', 'bad', '--factory', 'utf', '--auth-mode', 'signature', '--scheme', 'github', '--secret-stdin'], bad), refused);
  assert.equal((await cli(['webhook', 'show', 'bad', '--factory', 'utf'])).code, 1, 'create sent nothing');

  const created = await cli(['webhook', 'create', 'gh', '--factory', 'utf', '--auth-mode', 'signature', '--scheme', 'github', '--json']);
  assert.equal(created.code, 0, created.err);
  const { webhook } = JSON.parse(created.out) as { webhook: { uid: string; url: string } };
  assert.deepEqual(await cli(['webhook', 'set-secret', webhook.uid], bad), refused);
  let shown = JSON.parse((await cli(['webhook', 'show', webhook.uid, '--json'])).out) as { enabled: boolean; secret_version: number | null };
  assert.deepEqual([shown.enabled, shown.secret_version], [false, null], 'still pending and disabled');

  assert.equal((await cli(['webhook', 'set-secret', webhook.uid], 'good-secret\n')).code, 0);
  assert.deepEqual(await cli(['webhook', 'rotate', webhook.uid, '--secret-stdin'], bad), refused);
  shown = JSON.parse((await cli(['webhook', 'show', webhook.uid, '--json'])).out) as { enabled: boolean; secret_version: number | null };
  assert.deepEqual([shown.enabled, shown.secret_version], [true, 1], 'rotate wrote no new version');
  const body = '{"action":"opened"}';
  assert.equal((await fetch(webhook.url, { method: 'POST', body, headers: { 'X-Hub-Signature-256': await sign('good-secret', body) } })).status, 202, 'the secret set before still verifies');
});

test('a deleted webhook, which show still finds by its UID, is named as deleted by delete, enable, disable, rotate and set-secret', async () => {
  const created = await cli(['webhook', 'create', 'gone', '--factory', 'del', '--json']);
  assert.equal(created.code, 0, created.err);
  const uid = (JSON.parse(created.out) as { webhook: { uid: string } }).webhook.uid;
  assert.equal((await cli(['webhook', 'delete', uid])).code, 0);
  const shown = JSON.parse((await cli(['webhook', 'show', uid, '--json'])).out) as { deleted_at: string };
  assert.ok(shown.deleted_at);

  assert.deepEqual(await cli(['webhook', 'delete', uid]), { code: 1, out: '', err: `error: the webhook del/gone (${uid}) was already deleted at ${shown.deleted_at}.\n` });
  for (const [args, done, stdin] of [
    [['enable'], 'enabled'],
    [['disable'], 'disabled'],
    [['rotate'], 'rotated'],
    [['set-secret'], 'given a secret', 'a-secret\n'],
  ] as const) {
    assert.deepEqual(
      await cli(['webhook', ...args, uid], stdin),
      { code: 1, out: '', err: `error: the webhook del/gone (${uid}) was deleted at ${shown.deleted_at}, so it cannot be ${done}: a deleted webhook stays deleted.\n` },
      args[0],
    );
  }
});
