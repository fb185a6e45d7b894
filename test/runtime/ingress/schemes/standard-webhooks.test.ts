import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { standardWebhooks } from '../../../../runtime/ingress/schemes/standard-webhooks.ts';
import { NOW, assertFails, assertOk, commonCases, githubPayload, verify, windowCases, without } from './helpers.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const OTHER_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const ID = 'msg_2zD9Wm0bZ3oVq1Q8kC7nXyT4';

function standardAt(seconds: number, body: Buffer, secret: string) {
  const signature = new StandardWebhook(secret).sign(ID, new Date(seconds * 1000), body);
  return { 'webhook-id': ID, 'webhook-timestamp': String(seconds), 'webhook-signature': signature };
}

function svixAt(seconds: number, body: Buffer, secret: string) {
  const signature = new SvixWebhook(secret).sign(ID, new Date(seconds * 1000), body);
  return { 'svix-id': ID, 'svix-timestamp': String(seconds), 'svix-signature': signature };
}

const nowSeconds = Math.floor(NOW.getTime() / 1000);
// commonCases' wrong-secret case appends "x" to a whsec_ secret, which would not be valid
// base64; sign with a genuinely different secret instead.
const forStandard = (body: Buffer, secret: string) => standardAt(nowSeconds, body, secret === SECRET ? SECRET : OTHER_SECRET);
const forSvix = (body: Buffer, secret: string) => svixAt(nowSeconds, body, secret === SECRET ? SECRET : OTHER_SECRET);

describe('standard-webhooks: interop with the standardwebhooks package (webhook-* headers)', () => {
  commonCases({ scheme: standardWebhooks, secret: SECRET, body: githubPayload('push'), sign: forStandard, signatureHeader: 'webhook-signature' });
  windowCases({ scheme: standardWebhooks, secret: SECRET, body: githubPayload('push'), signAt: standardAt });
});

describe('standard-webhooks: interop with the svix package (svix-* headers)', () => {
  commonCases({ scheme: standardWebhooks, secret: SECRET, body: githubPayload('issues.opened'), sign: forSvix, signatureHeader: 'svix-signature' });
  windowCases({ scheme: standardWebhooks, secret: SECRET, body: githubPayload('issues.opened'), signAt: svixAt });
});

describe('standard-webhooks: known answer, secrets and format', () => {
  const vector = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    body: Buffer.from('{"test": 2432232314}'),
    headers: {
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    },
    now: new Date(1614265330 * 1000),
  };
  const run = (headers: Record<string, string>, secret = vector.secret) =>
    verify(standardWebhooks, headers, vector.body, secret, vector.now);

  test('the reference vector passes', () => assertOk(run(vector.headers)));
  test('a secret without the whsec_ prefix is base64-decoded whole', () => {
    assertOk(run(vector.headers, 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'));
  });
  test('a secret that is not base64 is invalid_secret', () => {
    assertFails(run(vector.headers, 'whsec_not base64!'), 'invalid_secret');
    assertFails(run(vector.headers, 'whsec_'), 'invalid_secret');
  });
  test("Stripe's rule (the whole string as key) is not used", () => {
    const stripeStyle = new StandardWebhook(Buffer.from(vector.secret), { format: 'raw' }).sign(
      vector.headers['webhook-id'], vector.now, vector.body);
    assertFails(run({ ...vector.headers, 'webhook-signature': stripeStyle }), 'signature_mismatch');
  });
  test('any matching entry of a multi-signature header passes', () => {
    const other = 'v1,' + Buffer.alloc(32, 7).toString('base64');
    assertOk(run({ ...vector.headers, 'webhook-signature': `${other} ${vector.headers['webhook-signature']}` }));
    assertOk(run({ ...vector.headers, 'webhook-signature': `${vector.headers['webhook-signature']} ${other}` }));
  });
  test('other versions are ignored', () => {
    const v1a = vector.headers['webhook-signature'].replace('v1,', 'v1a,');
    assertFails(run({ ...vector.headers, 'webhook-signature': v1a }), 'malformed_signature');
    assertOk(run({ ...vector.headers, 'webhook-signature': `${v1a} ${vector.headers['webhook-signature']}` }));
  });
  test('only non-matching v1 entries is a mismatch', () => {
    const other = 'v1,' + Buffer.alloc(32, 7).toString('base64');
    assertFails(run({ ...vector.headers, 'webhook-signature': `${other} ${other}` }), 'signature_mismatch');
  });
  test('a changed id is a mismatch', () => {
    assertFails(run({ ...vector.headers, 'webhook-id': 'msg_other' }), 'signature_mismatch');
  });
  test('a missing id is malformed', () => assertFails(run(without(vector.headers, 'webhook-id')), 'malformed_signature'));
  test('a missing timestamp is missing_timestamp', () => {
    assertFails(run(without(vector.headers, 'webhook-timestamp')), 'missing_timestamp');
  });
  test('a non-numeric timestamp is malformed_timestamp', () => {
    assertFails(run({ ...vector.headers, 'webhook-timestamp': '16142653e0' }), 'malformed_timestamp');
    assertFails(run({ ...vector.headers, 'webhook-timestamp': '-1614265330' }), 'malformed_timestamp');
  });
  test('the svix-* set passes with the same values', () => {
    assertOk(run({
      'svix-id': vector.headers['webhook-id'],
      'svix-timestamp': vector.headers['webhook-timestamp'],
      'svix-signature': vector.headers['webhook-signature'],
    }));
  });
  test('the sets are not mixed: webhook-signature reads webhook-id, not svix-id', () => {
    const mixed = { ...without(vector.headers, 'webhook-id'), 'svix-id': vector.headers['webhook-id'] };
    assertFails(run(mixed), 'malformed_signature');
  });
  test('a webhook-id beside a signed svix-* set selects the webhook-* set, so an unsigned id cannot become the identity', () => {
    const svixSet = {
      'svix-id': vector.headers['webhook-id'],
      'svix-timestamp': vector.headers['webhook-timestamp'],
      'svix-signature': vector.headers['webhook-signature'],
    };
    assertFails(run({ ...svixSet, 'webhook-id': 'fresh-unsigned-id' }), 'missing_signature');
    assertFails(run({ ...svixSet, 'webhook-timestamp': vector.headers['webhook-timestamp'] }), 'missing_signature');
  });
  test('an empty id is malformed, so the identity never falls through to another header', () => {
    assertFails(run({ ...vector.headers, 'webhook-id': '' }), 'malformed_signature');
  });
});
