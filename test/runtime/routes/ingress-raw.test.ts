import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { listenLocally } from '../../helpers/listen.ts';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, startIngressRuntime, type CreatedHook } from '../ingress/helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * The raw node:http adapter (runtime/routes/ingress.ts ingressListener, routed by app.ts
 * appListener) against the Koa route it bypasses: the same requests get the same statuses,
 * headers and problem+json bodies, and the same access-log lines.
 */

let rt: TestRuntime;
let koa: Server;
let koaUrl: string;
let tok: CreatedHook;
let urlTok: CreatedHook;

before(async () => {
  rt = await startIngressRuntime({ limits: { deliveriesPerMinute: 100_000, failedAuthPerMinute: 100_000 } });
  tok = await createHook(rt, 'raw', { name: 'tok' });
  urlTok = await createHook(rt, 'raw', { name: 'legacy', auth_mode: 'url_token' });
  // The same app through Koa only (app.callback(), no appListener in front).
  koa = createServer(rt.app.callback());
  koaUrl = await listenLocally(koa);
});
after(async () => {
  await new Promise<void>((resolve) => koa.close(() => resolve()));
  await rt.stop();
});

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

/** One request on its own connection; resolves when the answer has ended. */
function send(base: string, method: string, path: string, headers: Record<string, string | number>, body?: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method, headers: { Connection: 'close', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h = res.headers;
        resolve({
          status: res.statusCode ?? 0,
          headers: { 'content-type': h['content-type'], 'content-length': h['content-length'], allow: h.allow as string | undefined, 'retry-after': h['retry-after'] as string | undefined, 'x-should-retry': h['x-should-retry'] as string | undefined },
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const CAP = 262_144;

describe('raw adapter and Koa route answer alike', () => {
  const cases: [string, () => [string, string, Record<string, string | number>, (string | Buffer)?]][] = [
    ['405 with Allow for GET', () => ['GET', `/webhooks/w/${tok.uid}`, {}]],
    ['405 for PUT on an unknown UID', () => ['PUT', '/webhooks/w/wh_nope', {}, '{}']],
    ['404 for an unknown UID', () => ['POST', '/webhooks/w/wh_nope', {}, '{}']],
    ['404 for a path with too many segments', () => ['POST', '/webhooks/w/a/b/c', {}, '{}']],
    ['404 for a token segment on a token webhook', () => ['POST', `/webhooks/w/${tok.uid}/x`, {}, '{}']],
    ['401 without credentials', () => ['POST', `/webhooks/w/${tok.uid}`, {}, '{}']],
    ['401 for a wrong URL token', () => ['POST', `/webhooks/w/${urlTok.uid}/wrong?q=1`, {}, '{}']],
    ['413 by Content-Length', () => ['POST', `/webhooks/w/${tok.uid}`, { Authorization: `Bearer ${tok.secret}` }, 'x'.repeat(CAP + 1)]],
    ['400 for invalid JSON', () => ['POST', `/webhooks/w/${tok.uid}`, { Authorization: `Bearer ${tok.secret}` }, '{nope']],
    ['400 for an empty body', () => ['POST', `/webhooks/w/${tok.uid}`, { Authorization: `Bearer ${tok.secret}` }, '']],
    ['202 with a query string', () => ['POST', `/webhooks/w/${tok.uid}?a=1`, { Authorization: `Bearer ${tok.secret}` }, '{"q":1}']],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const [method, path, headers, body] = make();
      const raw = await send(rt.url, method, path, headers, body);
      const viaKoa = await send(koaUrl, method, path, headers, body);
      assert.deepEqual(raw, viaKoa);
      if (raw.status !== 202) {
        assert.equal(raw.headers['content-type'], 'application/problem+json');
        const problem = JSON.parse(raw.body) as { status: number; instance: string; retryable: boolean };
        assert.equal(problem.status, raw.status);
        assert.equal(raw.headers['x-should-retry'], String(problem.retryable));
        assert.ok(!problem.instance.includes('wrong'), 'the URL token segment is redacted');
      }
    });
  }

  it('202 with the same body shape and JSON type', async () => {
    const auth = { Authorization: `Bearer ${tok.secret}` };
    const raw = await send(rt.url, 'POST', `/webhooks/w/${tok.uid}`, { ...auth, 'X-Service-Delivery-Id': 'raw-1' }, '{}');
    const viaKoa = await send(koaUrl, 'POST', `/webhooks/w/${tok.uid}`, { ...auth, 'X-Service-Delivery-Id': 'koa-1' }, '{}');
    assert.equal(raw.status, 202);
    assert.equal(viaKoa.status, 202);
    assert.equal(raw.headers['content-type'], viaKoa.headers['content-type']);
    assert.deepEqual(JSON.parse(raw.body), { delivery_id: 'raw-1' });
    assert.deepEqual(JSON.parse(viaKoa.body), { delivery_id: 'koa-1' });
  });

  it('answers 413 for a chunked body past the cap, on both paths', async () => {
    for (const base of [rt.url, koaUrl]) {
      const res = await new Promise<number>((resolve, reject) => {
        const req = request(`${base}/webhooks/w/${tok.uid}`, { method: 'POST', headers: { Authorization: `Bearer ${tok.secret}`, Connection: 'close' } }, (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
        req.write('"' + 'a'.repeat(CAP));
        req.end('"');
      });
      assert.equal(res, 413);
    }
  });
});

describe('raw adapter', () => {
  it('serves deliveries without going through Koa, and everything else through it', async () => {
    // Koa's request handler calls app.createContext for every request it serves.
    const seen: string[] = [];
    const createContext = rt.app.createContext;
    rt.app.createContext = function (this: typeof rt.app, req, res) {
      seen.push(String(req.url));
      return createContext.call(this, req, res);
    } as typeof createContext;
    try {
      assert.equal((await deliver(tok.url, '{"fast":1}', { Authorization: `Bearer ${tok.secret}` })).status, 202);
      assert.equal((await fetch(`${rt.url}/webhooks/w/wh_nope`, { method: 'GET' })).status, 405);
      assert.equal((await fetch(`${rt.url}/healthz`)).status, 200);
    } finally {
      rt.app.createContext = createContext;
    }
    assert.deepEqual(seen, ['/healthz']);
  });

  it('leaves everything that is not /webhooks/w/... to Koa', async () => {
    const res = await send(rt.url, 'POST', '/webhooks/w', {}, '{}');
    assert.equal(res.status, 404);
    assert.equal((JSON.parse(res.body) as { code: string }).code, 'resource_not_found');
    assert.equal((await fetch(`${rt.url}/healthz`)).status, 200);
  });

  it('writes one access-log line per request, with the URL token redacted', async () => {
    const before = rt.logs.records().length;
    const secretPath = `/webhooks/w/${urlTok.uid}/${encodeURIComponent(urlTok.secret!)}`;
    assert.equal((await deliver(rt.url + secretPath + '?x=y', '{"logged":1}')).status, 202);
    const lines = rt.logs.records().slice(before).filter((r) => r.msg === 'request');
    assert.equal(lines.length, 1);
    assert.deepEqual({ ...lines[0], time: undefined, ms: undefined }, {
      level: 30, time: undefined, ms: undefined, method: 'POST', path: `/webhooks/w/${urlTok.uid}/[REDACTED]`, status: 202, msg: 'request',
      outcome: 'accepted', delivery_id: lines[0].delivery_id,
    });
    // No id header: the identity is the body's hash (docs/ingress.md#identity), as the 202 said.
    assert.match(String(lines[0].delivery_id), /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof lines[0].ms, 'number');
    assert.ok(!rt.logs.text.includes(urlTok.secret!), 'the URL token never reaches a log line');

    // The same delivery through Koa (an absolute-form target, say) logs the same line and is timed alike.
    const latency = rt.services.ingress!.metrics.latency;
    const timed = latency.count;
    const koaBefore = rt.logs.records().length;
    assert.equal((await send(koaUrl, 'POST', secretPath, { 'Content-Type': 'application/json' }, '{"logged":2}')).status, 202);
    const [koaLine] = rt.logs.records().slice(koaBefore).filter((r) => r.msg === 'request');
    assert.deepEqual({ ...koaLine, time: undefined, ms: undefined }, {
      level: 30, time: undefined, ms: undefined, method: 'POST', path: `/webhooks/w/${urlTok.uid}/[REDACTED]`, status: 202, msg: 'request',
      outcome: 'accepted', delivery_id: koaLine.delivery_id,
    });
    assert.match(String(koaLine.delivery_id), /^sha256:[0-9a-f]{64}$/);
    assert.equal(latency.count, timed + 1);
  });

  it('answers a failing Accepted hook with a bare 500 problem, logged once', async () => {
    const state = rt.services.ingress!;
    state.onAccepted.push(() => {
      throw new Error('hook exploded');
    });
    const before = rt.logs.records().length;
    try {
      const res = await deliver(tok.url, '{"h":1}', { Authorization: `Bearer ${tok.secret}`, 'X-Service-Delivery-Id': 'boom' });
      assert.equal(res.status, 500);
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'internal_error');
      assert.ok(!problem.detail.includes('exploded'), '5xx details are never shown');
    } finally {
      state.onAccepted.pop();
    }
    const lines = rt.logs.records().slice(before);
    assert.equal(lines.filter((r) => r.msg === 'unhandled error').length, 1);
    assert.equal(lines.filter((r) => r.msg === 'request' && r.status === 500).length, 1);
    assert.equal(rt.store.deliveries.get(tok.uid, 'boom'), undefined, 'nothing was logged for the failed delivery');
  });
});

describe('answers given before the body is read (404, 405) never wait for a body of any size', () => {
  /** Sends only the head of a request declaring `length` bytes; the raw answer once the server closes. */
  async function headOnly(method: string, path: string, length: number): Promise<{ answer: string }> {
    const { connect } = await import('node:net');
    const sock = connect(rt.port, '127.0.0.1');
    let answer = '';
    let closed = false;
    sock.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    sock.on('close', () => (closed = true));
    sock.on('error', () => {});
    sock.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`);
    await eventually(() => closed, `the server closes the connection after its ${method} answer`, { tries: 200 });
    sock.destroy();
    return { answer };
  }

  for (const [method, path, status] of [
    ['POST', '/webhooks/w/wh_nosuchwebhooknosuchwebhookn', 404],
    ['PUT', '/webhooks/w/wh_nosuchwebhooknosuchwebhookn', 405],
  ] as const) {
    it(`${method} ${status} with a declared gigabyte: answered, then the connection is closed, nothing read`, async () => {
      const { answer } = await headOnly(method, path, 1024 * 1024 * 1024);
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `));
      assert.match(answer, /\r\nConnection: close\r\n/i);
    });
  }
});
