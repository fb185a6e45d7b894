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
