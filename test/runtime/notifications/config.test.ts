import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../runtime/config.ts';

test('config: --notify-allow and --notify-retry-delays, from flags or the environment, with one-sentence errors', () => {
  const base = { dataDir: '/tmp/factory-notify-config' };
  const d = parseConfig(base, {});
  assert.equal(d.notify.allow, null);
  assert.deepEqual(d.notify.retryDelaysMs, [10_000, 30_000, 60_000, 180_000, 300_000]);
  const f = parseConfig({ ...base, notifyAllow: ['a.example', 'b.example:8080'], notifyRetryDelays: '1s,2s' }, {});
  assert.deepEqual(f.notify.allow, [{ host: 'a.example' }, { host: 'b.example', port: 8080 }]);
  assert.deepEqual(f.notify.retryDelaysMs, [1000, 2000]);
  const e = parseConfig(base, { FACTORY_NOTIFY_ALLOW: 'x.example, y.example:1', FACTORY_NOTIFY_RETRY_DELAYS: '5s' });
  assert.deepEqual(e.notify.allow, [{ host: 'x.example' }, { host: 'y.example', port: 1 }]);
  assert.deepEqual(e.notify.retryDelaysMs, [5000]);
  assert.throws(() => parseConfig({ ...base, notifyAllow: ['http://x'] }, {}), /--notify-allow must be HOST or HOST:PORT/);
  assert.throws(() => parseConfig({ ...base, notifyRetryDelays: '1s,soon' }, {}), /--notify-retry-delays must be up to 20 comma-separated waits/);
  assert.throws(() => parseConfig(base, { FACTORY_NOTIFY_RETRY_DELAYS: '2d' }), /FACTORY_NOTIFY_RETRY_DELAYS must be/);
});
