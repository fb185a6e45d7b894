import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, rawPost, startIngressRuntime, type CreatedHook } from '../ingress/helpers.ts';

/** docs/ingress.md (pipeline, identity) and docs/signatures.md through a real server, real SQLite and fetch. Rate limits: rate-limits.test.ts. */

const CAP = 262_144;
/** A JSON string document of exactly `n` bytes. */
const jsonOfSize = (n: number) => '"' + 'a'.repeat(n - 2) + '"';
/** Real GitHub payloads (octokit/webhooks' payload examples, MIT: see the fixtures' LICENSE-octokit-webhooks). */
const PAYLOADS = fileURLToPath(new URL('../ingress/schemes/fixtures/github', import.meta.url));

let rt: TestRuntime;
let token: CreatedHook;
let other: CreatedHook;
let urlTok: CreatedHook;

before(async () => {
  // Generous rate limits: this file is about the pipeline, not the budgets.
  rt = await startIngressRuntime({ limits: { deliveriesPerMinute: 100_000, failedAuthPerMinute: 100_000 } });
  token = await createHook(rt, 'shop', { name: 'orders' });
  other = await createHook(rt, 'shop', { name: 'refunds' });
  urlTok = await createHook(rt, 'shop', { name: 'legacy', auth_mode: 'url_token' });
});
after(() => rt.stop());

const bearer = (secret: string | undefined) => ({ Authorization: `Bearer ${secret}` });

describe('token mode (7.2)', () => {
  it('accepts the right secret and refuses a wrong, missing or other webhook\'s secret with 401', async () => {
    assert.equal((await deliver(token.url, '{"n":1}', bearer(token.secret))).status, 202);
    for (const headers of [bearer('wrong'), {}, bearer(other.secret), { Authorization: `Basic ${token.secret}` }]) {
      const res = await deliver(token.url, '{"n":2}', headers);
      assert.equal(res.status, 401);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(((await res.json()) as { code: string }).code, 'authentication_required');
    }
    const log = await logOf(rt, token.uid);
    assert.deepEqual(log.slice(0, 4).map((e) => e.outcome_label), Array(4).fill('Rejected (auth)'));
    assert.ok(log.slice(0, 4).every((e) => e.delivery_id.startsWith('dlv_') && !e.has_payload));
  });
});

describe('url_token mode (7.2)', () => {
  it('takes the secret from the last path segment', async () => {
    assert.match(urlTok.url, /\/\{token\}$/);
    const base = urlTok.url.replace(/\/\{token\}$/, '');
    const good = urlTok.body.url as string;
    assert.equal(good, `${base}/${encodeURIComponent(urlTok.secret!)}`);
    assert.equal((await deliver(good, '{"u":1}')).status, 202);
    assert.equal((await deliver(`${base}/wrong`, '{"u":2}')).status, 401);
    assert.equal((await deliver(base, '{"u":3}')).status, 401);
    assert.equal((await deliver(`${base}/`, '{"u":4}')).status, 401);
    assert.equal((await deliver(`${base}/${other.secret}`, '{"u":5}')).status, 401);
    // A token segment on a token-mode webhook is a URL that does not exist.
    assert.equal((await deliver(`${token.url}/${token.secret}`, '{}', bearer(token.secret))).status, 404);
  });

  it('never writes the URL token to a log line or a log entry', async () => {
    const log = await logOf(rt, urlTok.uid);
    assert.ok(log.length >= 5);
    assert.ok(!JSON.stringify(log).includes(urlTok.secret!));
    assert.ok(!rt.logs.text.includes(urlTok.secret!), 'the access log shows the token');
    assert.ok(!rt.logs.text.includes(token.secret!));
    assert.ok(rt.logs.text.includes(`/webhooks/w/${urlTok.uid}/[REDACTED]`));
  });
});

describe('methods and addresses (7.1 steps 1–2)', () => {
  it('answers 405 with Allow: POST for other methods', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(token.url, { method });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal(((await res.json()) as { code: string }).code, 'method_not_allowed');
    }
  });

  it('answers one identical 404 for unknown, malformed and deleted webhooks', async () => {
    const unknown = await deliver(token.url.replace(/wh_.*/, 'wh_' + 'a'.repeat(26)), '{}');
    const junk = await deliver(token.url.replace(/wh_.*/, 'nope'), '{}');
    assert.equal(unknown.status, 404);
    assert.equal(junk.status, 404);
    const a = (await unknown.json()) as Record<string, unknown>;
    const b = (await junk.json()) as Record<string, unknown>;
    assert.equal(a.detail, b.detail);
    assert.equal(a.code, 'resource_not_found');
  });
});

describe('body cap (7.1 step 5)', () => {
  it('accepts exactly 262,144 bytes with and without Content-Length', async () => {
    const exact = jsonOfSize(CAP);
    assert.equal(Buffer.byteLength(exact), CAP);
    assert.equal((await deliver(token.url, exact, bearer(token.secret))).status, 202);
    const chunked = await rawPost(token.url, { ...bearer(token.secret), 'X-Service-Delivery-Id': 'exact-chunked' }, (req) => {
      req.write(exact.slice(0, 100_000));
      req.end(exact.slice(100_000));
    });
    assert.equal(chunked.status, 202, chunked.body);
  });

  it('refuses 262,145 bytes with 413, with and without Content-Length, and logs Rejected (too large)', async () => {
    const over = jsonOfSize(CAP + 1);
    const withLength = await deliver(token.url, over, bearer(token.secret));
    assert.equal(withLength.status, 413);
    assert.equal(((await withLength.json()) as { code: string }).code, 'payload_too_large');
    const chunked = await rawPost(token.url, bearer(token.secret), (req) => {
      req.write(over.slice(0, 200_000));
      req.end(over.slice(200_000));
    });
    assert.equal(chunked.status, 413);
    assert.equal((JSON.parse(chunked.body) as { code: string }).code, 'payload_too_large');
    const log = await logOf(rt, token.uid, 2);
    assert.deepEqual(log.map((e) => e.outcome_label), ['Rejected (too large)', 'Rejected (too large)']);
    assert.ok(log.every((e) => e.delivery_id.startsWith('dlv_') && e.size > CAP && !e.has_payload));
    // The connection is still usable afterwards: the server keeps answering.
    assert.equal((await deliver(token.url, '{"after":1}', bearer(token.secret))).status, 202);
  });

  it('does not read a 50 MB body into memory (chunked and declared)', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
    for (const declared of [false, true]) {
      const headers: Record<string, string | number> = { ...bearer(token.secret) };
      if (declared) headers['Content-Length'] = 50 * chunk.length;
      const res = await rawPost(token.url, headers, async (req) => {
        for (let i = 0; i < 50; i++) {
          if (req.destroyed) return;
          sample();
          if (!req.write(chunk)) await new Promise<void>((resolve) => { req.once('drain', resolve); req.once('close', resolve); });
        }
        req.end();
      });
      sample();
      assert.equal(res.status, 413);
    }
    // Buffering the body would add 50 MB; allow generous noise for the client and GC.
    assert.ok(peak - baseline < 35 * 1024 * 1024, `rss grew by ${((peak - baseline) / 1048576).toFixed(1)} MB`);
    assert.equal((await deliver(token.url, '{"still":"up"}', bearer(token.secret))).status, 202);
  });
});

describe('JSON (7.1 step 7)', () => {
  it('refuses invalid JSON, invalid UTF-8 and an empty body with 400, logged Rejected (invalid JSON)', async () => {
    const bodies = [Buffer.from('{"a":'), Buffer.from([0x22, 0xff, 0x22]), Buffer.alloc(0), Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])];
    for (const body of bodies) {
      const res = await deliver(token.url, body, bearer(token.secret));
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { code: string }).code, 'invalid_json');
    }
    const log = await logOf(rt, token.uid, bodies.length);
    assert.deepEqual(log.map((e) => e.outcome_label), Array(bodies.length).fill('Rejected (invalid JSON)'));
    assert.ok(log.every((e) => !e.has_payload));
  });

  it('a body with a byte-order mark is refused saying so, its reason logged', async () => {
    const res = await deliver(token.url, Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), bearer(token.secret));
    assert.equal(res.status, 400);
    const problem = (await res.json()) as { code: string; detail: string };
    assert.deepEqual(problem.code, 'invalid_json');
    assert.equal(problem.detail, 'The body starts with a byte-order mark, which JSON does not allow (RFC 8259); send it without one.');
    const [entry] = await logOf(rt, token.uid, 1);
    assert.deepEqual([entry.outcome_label, entry.reason], ['Rejected (invalid JSON)', 'byte_order_mark']);
  });

  it('accepts any JSON value, including scalars and arrays, and keeps the exact bytes', async () => {
    for (const body of ['42', '"text"', 'null', 'true', '[1, 2, 3]', ' {"spaced" : 1}\n']) {
      const res = await deliver(token.url, body, bearer(token.secret));
      assert.equal(res.status, 202, body);
      const { delivery_id } = (await res.json()) as { delivery_id: string };
      assert.equal(delivery_id, 'sha256:' + createHash('sha256').update(body).digest('hex'));
      const entry = rt.store.deliveries.get(token.uid, delivery_id)!;
      assert.equal(entry.outcome, 'accepted');
      assert.equal(rt.store.deliveries.payload(entry.seq)!.toString('utf8'), body);
    }
  });
});

describe('identity and duplicates (7.4)', () => {
  let hook: CreatedHook;
  const secret = 'It\'s a Secret to Everybody';
  before(async () => {
    hook = await createHook(rt, 'gh', { name: 'events', auth_mode: 'signature', signature_scheme: 'github', secret, delivery_id_header: 'X-My-Id' });
  });
  const signed = async (body: string, extra: Record<string, string>) =>
    deliver(hook.url, body, { 'X-Hub-Signature-256': await sign(secret, body), ...extra });

  it('takes the first of deliveryIdHeader, the scheme header, the body hash (X-Service-Delivery-Id is not signed, so not read)', async () => {
    const all = { 'X-My-Id': 'mine-1', 'X-GitHub-Delivery': 'gh-1', 'X-Service-Delivery-Id': 'svc-1' };
    const cases: [Record<string, string>, string, string][] = [
      [all, '{"i":1}', 'mine-1'],
      [{ 'X-GitHub-Delivery': 'gh-2', 'X-Service-Delivery-Id': 'svc-2' }, '{"i":2}', 'gh-2'],
      [{ 'X-Service-Delivery-Id': 'svc-3' }, '{"i":3}', 'sha256:' + createHash('sha256').update('{"i":3}').digest('hex')],
      [{}, '{"i":4}', 'sha256:' + createHash('sha256').update('{"i":4}').digest('hex')],
    ];
    for (const [headers, body, id] of cases) {
      const res = await signed(body, headers);
      assert.equal(res.status, 202);
      assert.deepEqual(await res.json(), { delivery_id: id });
    }
    // A captured signed request replayed under a new X-Service-Delivery-Id is the same delivery.
    const replayed = await signed('{"i":3}', { 'X-Service-Delivery-Id': 'svc-3-again' });
    assert.equal(replayed.status, 202);
    const id3 = cases[2][2];
    assert.deepEqual(await replayed.json(), { delivery_id: id3 });
    assert.deepEqual((await logOf(rt, hook.uid)).filter((e) => e.delivery_id === id3).map((e) => e.outcome).sort(), ['accepted', 'duplicate']);
  });

  it('gives exactly one Accepted and 19 Duplicate for 20 identical concurrent deliveries', async () => {
    const body = '{"race":true}';
    const headers = { 'X-GitHub-Delivery': 'race-1', 'X-Hub-Signature-256': await sign(secret, body) };
    const results = await Promise.all(Array.from({ length: 20 }, () => deliver(hook.url, body, headers)));
    assert.deepEqual(results.map((r) => r.status), Array(20).fill(202));
    const bodies = await Promise.all(results.map((r) => r.json()));
    assert.ok(bodies.every((b) => (b as { delivery_id: string }).delivery_id === 'race-1'));
    const entries = (await logOf(rt, hook.uid)).filter((e) => e.delivery_id === 'race-1');
    assert.equal(entries.filter((e) => e.outcome === 'accepted').length, 1);
    assert.equal(entries.filter((e) => e.outcome === 'duplicate').length, 19);
    assert.equal(entries.filter((e) => e.has_payload).length, 1);
  });

  it('does not let a rejected delivery make a later valid one a Duplicate', async () => {
    const body = '{"later":"valid"}';
    const bad = await deliver(hook.url, body, { 'X-GitHub-Delivery': 'same-id', 'X-Hub-Signature-256': await sign('wrong', body) });
    assert.equal(bad.status, 401);
    const badJson = await signed('{"not json', { 'X-GitHub-Delivery': 'same-id' });
    assert.equal(badJson.status, 400);
    const good = await signed(body, { 'X-GitHub-Delivery': 'same-id' });
    assert.equal(good.status, 202);
    const entry = rt.store.deliveries.get(hook.uid, 'same-id')!;
    assert.equal(entry.outcome, 'accepted');
    const again = await signed(body, { 'X-GitHub-Delivery': 'same-id' });
    assert.equal(again.status, 202);
    assert.equal((await logOf(rt, hook.uid, 1))[0].outcome_label, 'Duplicate');
  });
});

describe('signature mode through the pipeline (7.1 step 6)', () => {
  let hook: CreatedHook;
  const secret = 'gh-provider-secret';
  before(async () => {
    hook = await createHook(rt, 'gh', { name: 'real', auth_mode: 'signature', signature_scheme: 'github', secret });
  });

  it('accepts GitHub\'s real payloads signed by @octokit/webhooks-methods, keeping the exact bytes', async () => {
    const files = readdirSync(PAYLOADS).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 5);
    for (const file of files) {
      const body = readFileSync(`${PAYLOADS}/${file}`, 'utf8');
      const id = randomUUID();
      const res = await deliver(hook.url, body, {
        'Content-Type': 'application/json',
        'X-GitHub-Event': file.split('.')[0],
        'X-GitHub-Delivery': id,
        'X-Hub-Signature-256': await sign(secret, body),
      });
      assert.equal(res.status, 202, file);
      assert.deepEqual(await res.json(), { delivery_id: id });
      const entry = rt.store.deliveries.get(hook.uid, id)!;
      assert.equal(rt.store.deliveries.payload(entry.seq)!.toString('utf8'), body);
    }
  });

  it('refuses a flipped byte, a wrong secret and a missing signature with 401, logged Rejected (auth)', async () => {
    const body = readFileSync(`${PAYLOADS}/issues.opened.json`, 'utf8');
    const good = await sign(secret, body);
    const flipped = Buffer.from(body);
    flipped[10] ^= 1;
    const attempts: [Buffer | string, Record<string, string>][] = [
      [flipped, { 'X-Hub-Signature-256': good }],
      [body, { 'X-Hub-Signature-256': await sign('not-the-secret', body) }],
      [body, {}],
    ];
    for (const [b, headers] of attempts) {
      const res = await deliver(hook.url, b, { 'X-GitHub-Delivery': randomUUID(), ...headers });
      assert.equal(res.status, 401);
    }
    const log = await logOf(rt, hook.uid, 3);
    assert.deepEqual(log.map((e) => e.outcome_label), Array(3).fill('Rejected (auth)'));
    assert.deepEqual(log.map((e) => e.reason).reverse(), ['signature_mismatch', 'signature_mismatch', 'missing_signature']);
    assert.ok(!JSON.stringify(log).includes(secret));
  });
});
