import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { isNotifySecret, nextDelayMs, notifyAllowed, notifyUrlProblem, parseAllowEntry, parseDelay, signNotification, unsendableUrl } from '../../core/notify.ts';

test('notification URLs: absolute http(s) without credentials', () => {
  assert.equal(notifyUrlProblem('https://hooks.example.com/a?b=c'), undefined);
  assert.equal(notifyUrlProblem('http://127.0.0.1:8080/'), undefined);
  assert.match(notifyUrlProblem('ftp://example.com/')!, /http\(s\)/);
  assert.match(notifyUrlProblem('/relative')!, /absolute/);
  assert.match(notifyUrlProblem('https://u:p@example.com/')!, /user name or password/);
  assert.match(notifyUrlProblem('https://example.com/' + 'a'.repeat(3000))!, /at most 2048/);
  assert.match(notifyUrlProblem(42)!, /http\(s\) URL/);
});

test('the allow-list: host as written, with or without a port; null allows everything', () => {
  const allow = ['Hooks.Example.com', '10.0.0.5:8443', '[::1]:9000'].map((e) => parseAllowEntry(e)!);
  assert.equal(notifyAllowed('http://anything.example/', null), true);
  assert.equal(notifyAllowed('https://hooks.example.com/x', allow), true);
  assert.equal(notifyAllowed('http://hooks.example.com:81/x', allow), true);
  assert.equal(notifyAllowed('https://10.0.0.5:8443/', allow), true);
  assert.equal(notifyAllowed('https://10.0.0.5/', allow), false, 'port 443 is not 8443');
  assert.equal(notifyAllowed('http://[::1]:9000/', allow), true);
  assert.equal(notifyAllowed('https://evil.hooks.example.com/', allow), false);
  assert.equal(parseAllowEntry('host:99999'), undefined);
  assert.equal(parseAllowEntry('http://host'), undefined);
  assert.equal(parseAllowEntry('a b'), undefined);
  // Names that no URL's host can be.
  for (const bad of ['-', '.', '..', 'a..b', '-a.example', 'a-.example', '.example', 'x'.repeat(64) + '.example']) assert.equal(parseAllowEntry(bad), undefined, bad);
  assert.deepEqual(parseAllowEntry('my-hooks.example.com:8443'), { host: 'my-hooks.example.com', port: 8443 });
  assert.deepEqual(parseAllowEntry('localhost'), { host: 'localhost' });
  // An entry means the host a URL names however it is spelt: compared as the URL parser writes it.
  const spelt = ['[0:0:0:0:0:0:0:1]:8080', '10.0.0.010', '127.1'].map((e) => parseAllowEntry(e)!);
  assert.deepEqual(spelt, [{ host: '[::1]', port: 8080 }, { host: '10.0.0.8' }, { host: '127.0.0.1' }]);
  assert.equal(notifyAllowed('http://[0:0:0:0:0:0:0:1]:8080/', spelt), true);
  assert.equal(notifyAllowed('http://[::1]:8080/', spelt), true);
  assert.equal(notifyAllowed('http://10.0.0.010/', spelt), true);
  assert.equal(notifyAllowed('http://127.0.0.1/', spelt), true);
  assert.equal(notifyAllowed('http://10.0.0.10/', spelt), false);
  assert.equal(parseAllowEntry('[::1'), undefined);
  // A URL no parser accepts is allowed by no list (and refused as a URL before that: notifier.ts).
  assert.equal(notifyAllowed('https://hooks.example.com:99999/runs', allow), false);
  assert.equal(notifyAllowed('http://[::1/x', allow), false);
});

test('secrets are whsec_ + base64 of 24 to 64 bytes; the signature verifies with the standardwebhooks package', () => {
  const secret = 'whsec_' + randomBytes(32).toString('base64');
  assert.equal(isNotifySecret(secret), true);
  assert.equal(isNotifySecret('whsec_' + randomBytes(8).toString('base64')), false);
  assert.equal(isNotifySecret(randomBytes(32).toString('base64')), false);
  assert.equal(isNotifySecret('whsec_not base64!'), false);
  const body = JSON.stringify({ type: 'run.state_changed', run: { run_id: 'run_x' } });
  const ts = Math.floor(Date.now() / 1000);
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': signNotification(secret, 'msg_1', ts, body) };
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  assert.throws(() => new Webhook(secret).verify(body + ' ', headers));
});

test('retry waits: one per retry, then none', () => {
  assert.equal(nextDelayMs([10, 20], 1), 10);
  assert.equal(nextDelayMs([10, 20], 2), 20);
  assert.equal(nextDelayMs([10, 20], 3), undefined);
  assert.equal(parseDelay('250ms'), 250);
  assert.equal(parseDelay('10s'), 10_000);
  assert.equal(parseDelay('3m'), 180_000);
  assert.equal(parseDelay('7'), 7);
  assert.equal(parseDelay('1h'), undefined);
});

test('a notification URL must be written as the URL parser gives it back; the notifier still sends to one stored otherwise', () => {
  for (const [url, normal] of [
    ['http:/x', 'http://x/'],
    ['http://x.example/ spaces', 'http://x.example/%20spaces'],
    ['HTTP://X.EXAMPLE/', 'http://x.example/'],
    ['https://hooks.example.com:443/runs', 'https://hooks.example.com/runs'],
  ]) {
    assert.equal(notifyUrlProblem(url), `must be written as the URL parser spells it, ${JSON.stringify(normal)}`, url);
    assert.equal(notifyUrlProblem(normal), undefined, normal);
    assert.equal(unsendableUrl(url), undefined, url);
  }
  // An origin may leave out its '/': the same request either way.
  assert.equal(notifyUrlProblem('https://hooks.example.com'), undefined);
  assert.equal(notifyUrlProblem('https://hooks.example.com?x=1'), 'must be written as the URL parser spells it, "https://hooks.example.com/?x=1"');
  assert.match(unsendableUrl('ftp://example.com/')!, /http\(s\)/);
});
