import { it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import fc from 'fast-check';
import type { TestRuntime } from '../helpers.ts';
import { createHook, startIngressRuntime, type CreatedHook } from '../ingress/helpers.ts';

/**
 * Nothing a sender sends can crash the runtime or produce a 500: random methods,
 * paths, headers and bodies against the ingress; only documented statuses come back.
 */

const DOCUMENTED = new Set([202, 400, 401, 404, 405, 413, 429]);
let rt: TestRuntime;
const hooks: CreatedHook[] = [];

before(async () => {
  // High budgets so that requests reach the deeper steps instead of stopping at 429.
  rt = await startIngressRuntime({ limits: { ingressBodyBytes: 4096, deliveriesPerMinute: 1_000_000, failedAuthPerMinute: 1_000_000 } });
  hooks.push(await createHook(rt, 'prop', { name: 'tok' }));
  hooks.push(await createHook(rt, 'prop', { name: 'url', auth_mode: 'url_token' }));
  hooks.push(await createHook(rt, 'prop', { name: 'gh', auth_mode: 'signature', signature_scheme: 'github', secret: 's' }));
  hooks.push(await createHook(rt, 'prop', { name: 'sw', auth_mode: 'signature', signature_scheme: 'standard-webhooks' }));
  hooks.push(await createHook(rt, 'prop', { name: 'stripe', auth_mode: 'signature', signature_scheme: 'stripe', secret: 'whsec_x' }));
});
after(() => rt.stop());

/** A raw request (node:http, so any method and header bytes go through). */
function send(method: string, path: string, headers: Record<string, string>, body: Buffer, chunked: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string | number> = { ...headers };
    if (!chunked) h['Content-Length'] = body.length;
    const req = request(rt.url + path, { method, headers: h }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const token = fc.stringMatching(/^[A-Za-z0-9._~-]{0,30}$/);
const headerName = fc.constantFrom(
  'authorization', 'content-type', 'x-hub-signature-256', 'x-github-delivery', 'x-service-delivery-id', 'webhook-id',
  'webhook-timestamp', 'webhook-signature', 'stripe-signature', 'x-forwarded-for', 'content-encoding', 'x-random',
);
const headerValue = fc.oneof(
  fc.stringMatching(/^[\x20-\x7e]{0,60}$/),
  fc.constantFrom('Bearer ', 'Bearer x', 'sha256=', 'v1,abc', 't=1,v1=00', '99999999999999999999', 'gzip'),
);

/** An opening and its closing: objects, arrays, and a key made of brackets and an escaped quote. */
const OPENERS: [string, string][] = [['[', ']'], ['{"a":', '}'], ['{"[\\"{":', '}']];
/** Valid JSON nested up to 700 levels (mostly within the runtime's 4,096-byte cap). */
const deepJson = fc
  .tuple(fc.array(fc.constantFrom(...OPENERS), { maxLength: 700, size: 'max' }), fc.jsonValue({ maxDepth: 2 }))
  .map(([openers, inner]) => openers.map((o) => o[0]).join('') + JSON.stringify(inner) + openers.map((o) => o[1]).reverse().join(''));

it('answers only documented statuses and stays up', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
      fc.nat({ max: hooks.length }),
      fc.oneof(fc.constant(''), fc.constant('/'), token.map((t) => '/' + t), fc.constant('/a/b'), fc.constant('/%ff%00')),
      fc.dictionary(headerName, headerValue, { maxKeys: 5 }),
      fc.oneof(
        fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
        fc.json().map((j) => Buffer.from(j)),
        fc.nat({ max: 6000 }).map((n) => Buffer.alloc(n, 0x30)),
        deepJson.map((j) => Buffer.from(j)),
        // Unbalanced: deep, and not JSON.
        fc.nat({ max: 5000 }).map((n) => Buffer.from('['.repeat(n))),
      ),
      fc.boolean(),
      async (method, which, suffix, headers, body, chunked) => {
        const uid = which < hooks.length ? hooks[which].uid : 'wh_' + 'q'.repeat(26);
        const path = `/webhooks/w/${uid}${suffix}`;
        const status = await send(method, path, headers, method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : body, chunked);
        assert.ok(DOCUMENTED.has(status), `${method} ${path} → ${status}`);
      },
    ),
    // The failing request's own error (a reset connection, say) in the report, not only its inputs.
    { numRuns: 300, includeErrorInReport: true },
  );
  assert.equal((await fetch(rt.url + '/healthz')).status, 200);
});

it('accepts deeply nested JSON and the delivery log shows it byte for byte', async () => {
  const hook = hooks[0];
  await fc.assert(
    fc.asyncProperty(deepJson.filter((j) => Buffer.byteLength(j) <= 4096), async (body) => {
      const res = await fetch(hook.url, { method: 'POST', headers: { Authorization: `Bearer ${hook.secret}` }, body });
      const accepted = (await res.json()) as { delivery_id: string };
      assert.equal(res.status, 202);
      const detail = await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries/${encodeURIComponent(accepted.delivery_id)}`);
      const text = await detail.text();
      assert.equal(detail.status, 200, text.slice(0, 200));
      assert.ok(text.includes(`"payload":${body}`));
      assert.deepEqual((JSON.parse(text) as { payload: unknown }).payload, JSON.parse(body));
    }),
    { numRuns: 100, includeErrorInReport: true },
  );
});
