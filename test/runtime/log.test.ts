import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, redactUrl } from '../../runtime/log.ts';
import { LogCapture } from './helpers.ts';

test('redactUrl hides the url_token segment and drops query strings', () => {
  assert.equal(redactUrl('/webhooks/w/wh_abc/s3cr3t'), '/webhooks/w/wh_abc/[REDACTED]');
  assert.equal(redactUrl('/webhooks/w/wh_abc/s3cr3t/more?x=1'), '/webhooks/w/wh_abc/[REDACTED]');
  assert.equal(redactUrl('/webhooks/w/wh_abc'), '/webhooks/w/wh_abc');
  assert.equal(redactUrl('/webhooks/w/wh_abc?token=x'), '/webhooks/w/wh_abc');
  assert.equal(redactUrl('/api/v1/agent/runs?cursor=abc#f'), '/api/v1/agent/runs');
});

test('secret-like fields and auth headers are redacted', () => {
  const cap = new LogCapture();
  const log = createLogger({ level: 'info', destination: cap });
  log.info({ secret: 'S1', value: 'V1', token: 'T1', key: 'K1', nested: { secret: 'S2' }, req: { headers: { authorization: 'Bearer B1', cookie: 'C1' } } }, 'x');
  for (const leaked of ['S1', 'V1', 'T1', 'K1', 'S2', 'B1', 'C1']) assert.ok(!cap.text.includes(leaked), leaked);
  assert.match(cap.text, /\[REDACTED\]/);
});
