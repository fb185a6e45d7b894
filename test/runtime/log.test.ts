import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, redactUrl } from '../../runtime/log.ts';
import { LogCapture } from './helpers.ts';

test('redactUrl hides the url_token segment and drops query strings', () => {
  const uid = 'wh_abcdefghijklmnopqrstuvwxyz';
  assert.equal(redactUrl(`/webhooks/w/${uid}/s3cr3t`), `/webhooks/w/${uid}/[REDACTED]`);
  assert.equal(redactUrl(`/webhooks/w/${uid}/s3cr3t/more?x=1`), `/webhooks/w/${uid}/[REDACTED]`);
  assert.equal(redactUrl(`/webhooks/w/${uid}`), `/webhooks/w/${uid}`);
  assert.equal(redactUrl(`/webhooks/w/${uid}?token=x`), `/webhooks/w/${uid}`);
  // Only a UID-shaped segment shows: anything else there may be a token sent without its UID.
  assert.equal(redactUrl('/webhooks/w/wh_abc/s3cr3t'), '/webhooks/w/[REDACTED]');
  assert.equal(redactUrl('/api/v1/agent/runs?cursor=abc#f'), '/api/v1/agent/runs');
  // Every other shape: test/runtime/log-redact.test.ts.
});

test('secret-like fields and auth headers are redacted', () => {
  const cap = new LogCapture();
  const log = createLogger({ level: 'info', destination: cap });
  log.info({ secret: 'S1', value: 'V1', token: 'T1', key: 'K1', nested: { secret: 'S2' }, req: { headers: { authorization: 'Bearer B1', cookie: 'C1' } } }, 'x');
  for (const leaked of ['S1', 'V1', 'T1', 'K1', 'S2', 'B1', 'C1']) assert.ok(!cap.text.includes(leaked), leaked);
  assert.match(cap.text, /\[REDACTED\]/);
});
