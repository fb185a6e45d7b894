import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { readCappedBody, declaredLength } from '../../../runtime/ingress/body.ts';
import { headerIdentity, bodyIdentity, MAX_IDENTITY_LENGTH } from '../../../runtime/ingress/identity.ts';
import { parseIngressPath } from '../../../runtime/ingress/url.ts';
import { isJson, senderAddress } from '../../../runtime/ingress/pipeline.ts';
import { SecretCache } from '../../../runtime/ingress/secret-cache.ts';
import { secretEquals } from '../../../runtime/ingress/schemes/hmac.ts';

it('parses ingress paths', () => {
  assert.deepEqual(parseIngressPath('/webhooks/w/wh_x'), { uid: 'wh_x' });
  assert.deepEqual(parseIngressPath('/webhooks/w/wh_x/a%2Fb'), { uid: 'wh_x', token: 'a/b' });
  assert.deepEqual(parseIngressPath('/webhooks/w/wh_x/'), { uid: 'wh_x', token: '' });
  assert.deepEqual(parseIngressPath('/webhooks/w/wh_x/%zz'), { uid: 'wh_x', token: '%zz' });
  for (const p of ['/webhooks/w/', '/webhooks/w', '/webhooks/w/a/b/c', '/other']) assert.equal(parseIngressPath(p), undefined);
});

it('identity: header order, empty values skipped, long values hashed', () => {
  const headers: Record<string, string> = { 'x-mine': '', 'x-github-delivery': 'gh', 'x-service-delivery-id': 'svc' };
  const get = (n: string) => headers[n];
  assert.equal(headerIdentity(get, { deliveryIdHeader: 'X-Mine', schemeHeaders: ['x-github-delivery'] }), 'gh');
  assert.equal(headerIdentity(get, { deliveryIdHeader: 'X-Mine' }), 'svc');
  // Signature mode: no signature covers X-Service-Delivery-Id, so it is not a source there.
  assert.equal(headerIdentity(get, { deliveryIdHeader: 'X-Mine', signed: true }), undefined);
  assert.equal(headerIdentity(get, { schemeHeaders: ['x-github-delivery'], signed: true }), 'gh');
  assert.equal(headerIdentity(() => undefined, {}), undefined);
  // Only HTTP's optional whitespace (spaces, tabs) is trimmed, as the signature schemes trim it;
  // a no-break space is part of the value, and a value of only spaces counts as absent.
  assert.equal(headerIdentity(() => ' \tid-1\t ', {}), 'id-1');
  // (a lone byte A0 is no UTF-8, so that id is named by its hash: still not the id without it)
  assert.notEqual(headerIdentity(() => 'id-1\xa0', {}), headerIdentity(() => 'id-1', {}));
  assert.notEqual(headerIdentity(() => '\xa0', {}), undefined);
  assert.equal(headerIdentity(() => ' \t ', {}), undefined);
  // Dot segments are no ids (a URL cannot carry them as a path segment): the next source is used.
  assert.equal(headerIdentity(() => '..', {}), undefined);
  assert.equal(headerIdentity((n) => (n === 'x-mine' ? '.' : n === 'x-service-delivery-id' ? 'svc' : undefined), { deliveryIdHeader: 'X-Mine' }), 'svc');
  assert.equal(headerIdentity(() => '...', {}), '...');
  // A header's bytes come one character each; an id sent as UTF-8 is read as the sender wrote it.
  assert.equal(headerIdentity(() => Buffer.from('commande-é-1', 'utf8').toString('latin1'), {}), 'commande-é-1');
  assert.match(headerIdentity(() => 'caf\xe9', {})!, /^sha256:[0-9a-f]{64}$/, 'bytes that are no UTF-8 are named by their hash');
  assert.notEqual(headerIdentity(() => 'caf\xe9', {}), headerIdentity(() => Buffer.from('café', 'utf8').toString('latin1'), {}), 'E9 and C3 A9 are two ids');
  const long = 'x'.repeat(MAX_IDENTITY_LENGTH + 1);
  assert.match(headerIdentity(() => long, {})!, /^sha256:[0-9a-f]{64}$/);
  assert.equal(bodyIdentity(Buffer.from('')), 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
});

it('strict UTF-8 JSON', () => {
  assert.equal(isJson(Buffer.from('{"a":"é"}')), true);
  assert.equal(isJson(Buffer.from('0')), true);
  assert.equal(isJson(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d])), false, 'a BOM is not JSON');
  assert.equal(isJson(Buffer.from([0xc0, 0xaf])), false, 'overlong');
  assert.equal(isJson(Buffer.from('')), false);
  assert.equal(isJson(Buffer.from('[' .repeat(100_000))), false);
});

it('reads a body up to the cap and stops at cap + 1', async () => {
  assert.deepEqual(await readCappedBody(Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 4), { ok: true, body: Buffer.from('abcd') });
  const over = await readCappedBody(Readable.from([Buffer.from('ab'), Buffer.from('cde')]), 4);
  assert.deepEqual(over, { ok: false, reason: 'too_large', size: 5 });
  assert.deepEqual(await readCappedBody(Readable.from([]), 4, 5), { ok: false, reason: 'too_large', size: 5 });
  assert.equal(declaredLength(' 12 '), 12);
  assert.equal(declaredLength('1e3'), undefined);
  // Beyond 15 digits: too large, never "no length" (which would read up to the cap and log the bytes seen).
  assert.equal(declaredLength('999999999999999'), 999999999999999);
  assert.equal(declaredLength('1000000000000000'), Number.MAX_SAFE_INTEGER);
  assert.equal(declaredLength('0'.repeat(40) + '5'), 5);
});

it('sender address and secrets', () => {
  // Behind a trusted proxy: the rightmost entry, the one the proxy appended (docs/ingress.md).
  const behind = (xff: string | string[] | undefined) => senderAddress({ headers: { 'x-forwarded-for': xff }, remoteAddress: '9.9.9.9' }, true);
  assert.equal(behind('1.2.3.4, 5.6.7.8'), '5.6.7.8');
  assert.equal(behind('spoofed, 5.6.7.8 '), '5.6.7.8');
  assert.equal(behind(['1.2.3.4', '2001:db8::1']), '2001:db8::1');
  for (const bad of [undefined, '', ' ', '1.2.3.4,', '1.2.3.4, unknown', '5.6.7.8:443', 'x'.repeat(500)]) assert.equal(behind(bad), '9.9.9.9', String(bad));
  assert.equal(senderAddress({ headers: { 'x-forwarded-for': '1.2.3.4' }, remoteAddress: '9.9.9.9' }, false), '9.9.9.9');
  assert.equal(secretEquals('a', 'a'), true);
  assert.equal(secretEquals('a', 'ab'), false);
  let reveals = 0;
  let now = 0;
  const cache = new SecretCache((name, v) => (reveals++, `${name}@${v}`), () => now);
  assert.equal(cache.get('s', 1), 's@1');
  assert.equal(cache.get('s', 1), 's@1');
  assert.equal(reveals, 1);
  assert.equal(cache.get('s', 2), 's@2');
  now += SecretCache.MAX_AGE_MS;
  cache.get('s', 1);
  assert.equal(reveals, 3);
});
