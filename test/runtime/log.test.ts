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
  assert.equal(redactUrl('/webhooks/w;/wh_abcdefghijklmnopqrstuvwxyz/s3cr3t'), '/webhooks/[REDACTED]');
  assert.equal(redactUrl('/api/v1/agent/runs?cursor=abc#f'), '/api/v1/agent/runs');
  // Every other shape: test/runtime/log-redact.test.ts.
});

test('secret-like fields and auth headers are redacted', () => {
  const cap = new LogCapture();
  const log = createLogger({ level: 'info', destination: cap });
  // Sentinels that cannot occur by chance in a log line (a bare 'T1' is in every ISO time from 10:00 to 19:59).
  const v = (name: string) => `leak-${name}-7f3a9c`;
  log.info(
    { secret: v('s1'), value: v('v1'), token: v('t1'), key: v('k1'), nested: { secret: v('s2') }, req: { headers: { authorization: `Bearer ${v('b1')}`, cookie: v('c1') } } },
    'x',
  );
  assert.ok(cap.text.length > 0);
  for (const leaked of ['s1', 'v1', 't1', 'k1', 's2', 'b1', 'c1'].map(v)) assert.ok(!cap.text.includes(leaked), leaked);
  assert.match(cap.text, /\[REDACTED\]/);
});
