import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBuffered } from './helpers.ts';
import { startTestRuntime } from '../runtime/helpers.ts';

/**
 * An empty id or name (`factory run get "$ID"` with ID unset) is a usage error in one sentence,
 * never a request: in a URL it would name the list route, and the command would print a list, or
 * "undefined" fields, with exit status 0.
 */
test('an empty id or name argument is a usage error in one sentence (exit 2), for runs, deliveries, secrets, keys and webhooks', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const res = await rt.fetch('/api/v1/factories/shop/webhooks', { method: 'POST', json: { name: 'orders' } });
  assert.equal(res.status, 201, await res.text());
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cases: [string[], string][] = [
    [['run', 'get', ''], 'run id'],
    [['run', 'get', '', '--json'], 'run id'],
    [['run', 'cancel', ''], 'run id'],
    [['run', 'retry', ''], 'run id'],
    [['run', 'transcript', '', '--follow'], 'run id'],
    [['delivery', 'show', 'orders', ''], 'delivery id'],
    [['delivery', 'show', 'orders', '', '--json'], 'delivery id'],
    [['delivery', 'replay', 'orders', ''], 'delivery id'],
    [['delivery', 'list', ''], 'webhook UID or name'],
    [['secret', 'delete', ''], 'secret name'],
    [['secret', 'update', ''], 'secret name'],
    [['secret', 'grant', '', '--all'], 'secret name'],
    [['key', 'revoke', ''], 'key id'],
    [['webhook', 'show', ''], 'webhook UID or name'],
    [['webhook', 'show', '', '--json'], 'webhook UID or name'],
    [['webhook', 'enable', ''], 'webhook UID or name'],
    [['webhook', 'disable', ''], 'webhook UID or name'],
    [['webhook', 'delete', ''], 'webhook UID or name'],
    [['webhook', 'rotate', ''], 'webhook UID or name'],
    [['webhook', 'set-secret', ''], 'webhook UID or name'],
    [['webhook', 'create', '', '--factory', 'shop'], 'webhook name'],
  ];
  for (const [args, what] of cases) {
    const r = await runBuffered(args, env);
    assert.deepEqual(r, { code: 2, out: '', err: `error: the ${what} given is empty; pass a ${what} (an unset shell variable gives an empty one).\n` }, args.join(' '));
  }
});

test('run create with an empty --idempotency-key, and run list with a bad --limit or --state, are usage errors before any request (exit 2)', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cases: [string[], string][] = [
    [['run', 'create', '--prompt', 'p', '--environment', 'e', '--idempotency-key', ''], "error: --idempotency-key is empty; pass a key (an unset shell variable gives an empty one), or leave the option out.\n"],
    [['run', 'list', '--limit', '0'], 'error: --limit must be an integer from 1 to 100, got "0".\n'],
    [['run', 'list', '--limit', 'abc'], 'error: --limit must be an integer from 1 to 100, got "abc".\n'],
    [['run', 'list', '--state', 'bogus'], 'error: --state must be one of QUEUED, INPROGRESS, SUCCEEDED, FAILED, ERROR, CANCELLED, got "BOGUS".\n'],
  ];
  for (const [args, err] of cases) assert.deepEqual(await runBuffered(args, env), { code: 2, out: '', err }, args.join(' '));
  // The accepted forms still work: a state in any case, the largest limit.
  const ok = await runBuffered(['run', 'list', '--state', 'failed', '--limit', '100', '--quiet'], env);
  assert.deepEqual(ok, { code: 0, out: '', err: '' });
});
