import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { runCli } from '../../../cli/main.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { GITHUB_UID, SECRET_NAME, applyFactory, createSecret } from '../../runtime/automations/helpers.ts';
import { bufferIO, runBuffered } from '../helpers.ts';

/** `factory secret update` says which webhooks still use an older version, and how to move them (docs/ingress.md#webhook-lifecycle). */

test('after an update, the webhooks bound to an older version are named with the way to move them', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  await createSecret(rt);
  await applyFactory(rt, { review: {} });
  const update = (value: string) => runBuffered(['secret', 'update', SECRET_NAME], { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, { stdin: Readable.from([value]) });

  const first = await update('second-value-of-the-signing-secret');
  assert.equal(first.code, 0, first.err);
  assert.equal(first.out, `updated secret ${SECRET_NAME} (version 2)\n`);
  assert.equal(first.err, `This webhook still uses an older value: shop/github (version 1). Run \`factory apply\` for its factory, or disable and enable it, to move to version 2.\n`);
  assert.ok(!first.err.includes('second-value'));

  // Re-enabling binds the current version: no hint after the next update names version 2 as current.
  for (const action of ['disable', 'enable']) assert.equal((await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/${action}`, { method: 'POST' })).status, 200);
  const webhook = (await (await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}`)).json()) as { secret_version: number };
  assert.equal(webhook.secret_version, 2);

  await applyFactory(rt, { review: {} });
  const io = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, { stdin: Readable.from(['x']) });
  assert.equal(await runCli(['secret', 'create', 'unrelated'], io), 0, io.err);
  const unrelated = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, { stdin: Readable.from(['y']) });
  assert.equal(await runCli(['secret', 'update', 'unrelated'], unrelated), 0, unrelated.err);
  assert.equal(unrelated.err, '', 'no webhook uses it: no hint');
  const third = await update('third-value-of-the-signing-secret');
  assert.match(third.err, /shop\/github \(version 2\)\. .* to move to version 3\.\n$/);
});

test("an API-managed factory's webhooks are told the enable that moves them, not apply; one held disabled while its secret was pending is named too", async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cli = (args: string[], stdin?: string) => runBuffered(args, env, stdin === undefined ? {} : { stdin: Readable.from([stdin]) });
  const show = async (uid: string) => JSON.parse((await cli(['webhook', 'show', uid, '--json'])).out) as { enabled: boolean; secret_version: number | null };
  /** The commands a hint names, run as written. */
  const runHint = async (hint: string) => {
    const commands = [...hint.matchAll(/`factory (webhook enable wh_\w+)`/g)].map((m) => m[1].split(' '));
    assert.ok(commands.length > 0, hint);
    for (const args of commands) assert.equal((await cli(args)).code, 0, args.join(' '));
  };

  const deploys = await cli(['webhook', 'create', 'deploys', '--factory', 'ops', '--json']);
  assert.equal(deploys.code, 0, deploys.err);
  const deploysUid = (JSON.parse(deploys.out) as { webhook: { uid: string } }).webhook.uid;
  const updated = await cli(['secret', 'update', 'ops-deploys-secret'], 'a-new-deploys-token-of-enough-length');
  assert.equal(updated.code, 0, updated.err);
  assert.equal(updated.err, `This webhook still uses an older value: ops/deploys (version 1). Run \`factory webhook enable ${deploysUid}\` to move to version 2.\n`);
  await runHint(updated.err);
  const deploysNow = await show(deploysUid);
  assert.deepEqual([deploysNow.enabled, deploysNow.secret_version], [true, 2]);

  const p2 = await cli(['webhook', 'create', 'p2', '--factory', 'ops', '--auth-mode', 'signature', '--scheme', 'paddle', '--json']);
  assert.equal(p2.code, 0, p2.err);
  const p2Uid = (JSON.parse(p2.out) as { webhook: { uid: string } }).webhook.uid;
  const supplied = await cli(['secret', 'update', 'ops-p2-secret'], 'pdl_ntfset_abcdef');
  assert.equal(supplied.code, 0, supplied.err);
  assert.equal(supplied.out, 'updated secret ops-p2-secret (version 1)\n');
  assert.equal(
    supplied.err,
    `This webhook was held disabled while the secret had no value, and is still disabled: ops/p2. Run \`factory webhook enable ${p2Uid}\` to bind version 1 and enable it.\n`,
  );
  await runHint(supplied.err);
  const p2Now = await show(p2Uid);
  assert.deepEqual([p2Now.enabled, p2Now.secret_version], [true, 1]);

  // A grace moves only webhooks bound to a version; the pending one still gets its hint.
  const p3 = await cli(['webhook', 'create', 'p3', '--factory', 'ops', '--auth-mode', 'signature', '--scheme', 'paddle', '--json']);
  const p3Uid = (JSON.parse(p3.out) as { webhook: { uid: string } }).webhook.uid;
  const graced = await cli(['secret', 'update', 'ops-p3-secret', '--grace', '1h'], 'pdl_ntfset_ghijkl');
  assert.equal(graced.code, 0, graced.err);
  assert.equal(graced.out, 'updated secret ops-p3-secret (version 1)\nno webhook is bound to it, so there was nothing to move\n');
  assert.match(graced.err, new RegExp(`^This webhook was held disabled .*: ops/p3\\. Run \`factory webhook enable ${p3Uid}\` to bind version 1 and enable it\\.\n$`));
});
