import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import Stripe from 'stripe';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { FakeClock } from '../../../runtime/clock.ts';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime } from '../ingress/helpers.ts';

/**
 * docs/signatures.md interop through the real server: each provider's own signer package signs, the
 * runtime's pipeline answers, and the delivery log records the outcome. The scheme modules have
 * their own exhaustive tests; this file shows that the whole path (headers as Node receives them,
 * raw bytes, the clock, the log) agrees with the providers.
 */

const clock = new FakeClock('2026-06-01T12:00:00.000Z');
const nowSeconds = () => Math.floor(clock.now().getTime() / 1000);
const SIX_MINUTES = 6 * 60;
let rt: TestRuntime;

before(async () => {
  rt = await startIngressRuntime({ clock, limits: { deliveriesPerMinute: 100_000, failedAuthPerMinute: 100_000 } });
});
after(() => rt.stop());

interface Provider {
  scheme: string;
  /** The secret to configure; undefined: the runtime generates one (standard-webhooks). */
  secret?: string;
  /** Signs `body` with `secret` at `seconds` (providers without timestamps ignore it). */
  sign(body: string, secret: string, seconds: number, id: string): Promise<Record<string, string>>;
  signatureHeader: string;
  timestamped: boolean;
}

const PROVIDERS: Provider[] = [
  {
    scheme: 'standard-webhooks',
    async sign(body, secret, seconds, id) {
      const signature = new StandardWebhook(secret).sign(id, new Date(seconds * 1000), body);
      return { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': signature };
    },
    signatureHeader: 'webhook-signature',
    timestamped: true,
  },
  {
    // Svix signs with its own package and sends the svix-* header set (docs/signatures.md).
    scheme: 'standard-webhooks',
    async sign(body, secret, seconds, id) {
      const signature = new SvixWebhook(secret).sign(id, new Date(seconds * 1000), body);
      return { 'svix-id': id, 'svix-timestamp': String(seconds), 'svix-signature': signature };
    },
    signatureHeader: 'svix-signature',
    timestamped: true,
  },
  {
    scheme: 'stripe',
    secret: 'whsec_interop_9fJ2kL5pQ8rT1vX4zB7nM3cH',
    async sign(body, secret, seconds) {
      return { 'Stripe-Signature': Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: seconds }) };
    },
    signatureHeader: 'Stripe-Signature',
    timestamped: true,
  },
  {
    scheme: 'github',
    secret: 'gh-interop-secret',
    async sign(body, secret, _seconds, id) {
      return { 'X-Hub-Signature-256': await githubSign(secret, body), 'X-GitHub-Delivery': id, 'X-GitHub-Event': 'ping' };
    },
    signatureHeader: 'X-Hub-Signature-256',
    timestamped: false,
  },
];

/** Flips one bit of one byte in the middle of the body, keeping it valid JSON. */
function flipByte(body: string): string {
  const i = body.indexOf('interop') + 2;
  return body.slice(0, i) + String.fromCharCode(body.charCodeAt(i) ^ 1) + body.slice(i + 1);
}

let n = 0;
for (const p of PROVIDERS) {
  const label = `${p.scheme} via ${p.signatureHeader.split('-')[0].toLowerCase()}`;
  describe(`${label}: the provider's own signer through the server`, () => {
    let hook: { uid: string; url: string };
    let secret: string;

    before(async () => {
      const created = await createHook(rt, 'interop', { name: `hook-${++n}`, auth_mode: 'signature', signature_scheme: p.scheme });
      hook = created;
      if (p.secret === undefined) secret = created.secret!;
      else {
        secret = p.secret;
        const set = await rt.fetch(`/api/v1/webhooks/${created.uid}/secret`, { method: 'POST', json: { secret } });
        assert.equal(set.status, 200);
      }
    });

    const body = () => JSON.stringify({ type: 'interop.test', data: { n, text: 'interop ünïcode ✓' } });

    it('accepts a signed delivery and keeps the exact bytes', async () => {
      const b = body();
      const id = `msg_${randomUUID()}`;
      const res = await deliver(hook.url, b, { 'Content-Type': 'application/json', ...(await p.sign(b, secret, nowSeconds(), id)) });
      assert.equal(res.status, 202, await res.clone().text());
      const [entry] = await logOf(rt, hook.uid, 1);
      assert.equal(entry.outcome_label, 'Accepted');
      const detail = (await (await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries/${encodeURIComponent(entry.delivery_id)}`)).json()) as { payload: unknown };
      assert.deepEqual(detail.payload, JSON.parse(b));
    });

    const rejections: [string, () => Promise<[string, Record<string, string>]>][] = [
      ['a flipped byte in the body', async () => {
        const b = body();
        return [flipByte(b), await p.sign(b, secret, nowSeconds(), `msg_${randomUUID()}`)];
      }],
      ['a wrong secret', async () => {
        const b = body();
        const wrong = p.secret === undefined ? 'whsec_' + Buffer.alloc(32, 7).toString('base64') : secret + 'x';
        return [b, await p.sign(b, wrong, nowSeconds(), `msg_${randomUUID()}`)];
      }],
      ['a missing signature header', async () => {
        const b = body();
        const headers = await p.sign(b, secret, nowSeconds(), `msg_${randomUUID()}`);
        delete headers[p.signatureHeader];
        return [b, headers];
      }],
    ];
    if (p.timestamped) {
      rejections.push(
        ['a timestamp six minutes old', async () => {
          const b = body();
          return [b, await p.sign(b, secret, nowSeconds() - SIX_MINUTES, `msg_${randomUUID()}`)];
        }],
        ['a timestamp six minutes ahead', async () => {
          const b = body();
          return [b, await p.sign(b, secret, nowSeconds() + SIX_MINUTES, `msg_${randomUUID()}`)];
        }],
      );
    }

    for (const [what, make] of rejections) {
      it(`refuses ${what} with 401, logged Rejected (auth) without a payload`, async () => {
        const [b, headers] = await make();
        const res = await deliver(hook.url, b, { 'Content-Type': 'application/json', ...headers });
        assert.equal(res.status, 401);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
        const [entry] = await logOf(rt, hook.uid, 1);
        assert.equal(entry.outcome_label, 'Rejected (auth)');
        assert.equal(entry.has_payload, false);
        assert.ok(!JSON.stringify(entry).includes(secret), 'the log entry holds no secret');
      });
    }

    if (p.timestamped) {
      it('accepts a timestamp four minutes off in either direction (inside the window)', async () => {
        for (const offset of [-240, 240]) {
          const b = body();
          const res = await deliver(hook.url, b, await p.sign(b, secret, nowSeconds() + offset, `msg_${randomUUID()}`));
          assert.equal(res.status, 202, `offset ${offset}s`);
        }
      });
    }
  });
}

describe('standard-webhooks: one signed message is one delivery, however its id header is padded', () => {
  let hook: { uid: string; url: string };
  let secret: string;
  before(async () => {
    const created = await createHook(rt, 'interop', { name: 'padded-ids', auth_mode: 'signature', signature_scheme: 'standard-webhooks' });
    hook = created;
    secret = created.secret!;
  });

  it('a no-break space (byte 0xA0) added to the signed id is a different id, so a 401; spaces and tabs around it are trimmed, so the same message again is a Duplicate', async () => {
    const b = JSON.stringify({ type: 'padded.id' });
    const id = `msg_${randomUUID()}`;
    const signed = { 'webhook-id': id, 'webhook-timestamp': String(nowSeconds()), 'webhook-signature': new StandardWebhook(secret).sign(id, new Date(nowSeconds() * 1000), b) };
    assert.equal((await deliver(hook.url, b, signed)).status, 202);
    for (const padded of [`${id}\xa0`, `\xa0${id}`, `${id}\xa0\xa0`]) {
      const res = await deliver(hook.url, b, { ...signed, 'webhook-id': padded });
      assert.equal(res.status, 401, JSON.stringify(padded));
    }
    // Svix's header set with a blank-looking webhook-id beside it selects the webhook-* set, which has no signature.
    const svix = { 'svix-id': id, 'svix-timestamp': signed['webhook-timestamp'], 'svix-signature': signed['webhook-signature'] };
    assert.equal((await deliver(hook.url, b, { ...svix, 'webhook-id': '\xa0' })).status, 401);
    // HTTP's own optional whitespace is not part of a value: the same message again.
    const again = await deliver(hook.url, b, { ...signed, 'webhook-id': `${id}\t ` });
    assert.equal(again.status, 202, await again.clone().text());
    const log = await logOf(rt, hook.uid, 20);
    assert.deepEqual(log.map((e) => e.outcome_label), ['Duplicate', 'Rejected (auth)', 'Rejected (auth)', 'Rejected (auth)', 'Rejected (auth)', 'Accepted']);
  });

  it('a non-ASCII id is verified over the bytes received', async () => {
    const b = JSON.stringify({ type: 'unicode.id' });
    const id = `msg_ünï_${randomUUID()}`;
    const signature = new StandardWebhook(secret).sign(id, new Date(nowSeconds() * 1000), b);
    // What the sender puts on the wire is the id's UTF-8 bytes; a header string is one character per byte.
    const wire = Buffer.from(id, 'utf8').toString('latin1');
    const res = await deliver(hook.url, b, { 'webhook-id': wire, 'webhook-timestamp': String(nowSeconds()), 'webhook-signature': signature });
    assert.equal(res.status, 202, await res.clone().text());
  });
});
