import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { Router } from '@koa/router';
import { FactoryError } from '../../../core/errors.ts';
import { problemMiddleware } from '../../../runtime/http/problem.ts';
import { readJsonBody } from '../../../runtime/http/body.ts';
import { createLogger } from '../../../runtime/log.ts';
import { LogCapture } from '../helpers.ts';

/** A real server with the real middleware and a few routes that fail in known ways. */
async function withServer(fn: (url: string, logs: LogCapture) => Promise<void>) {
  const logs = new LogCapture();
  const app = new Koa();
  app.silent = true;
  app.use(problemMiddleware(createLogger({ destination: logs })));
  const router = new Router();
  router.get('/validation', () => {
    throw new FactoryError('invalid_request', 'The thing is not valid.', {
      errors: [{ pointer: '/name', message: 'required' }],
      headers: { 'X-Extra': 'yes' },
    });
  });
  router.get('/boom', (ctx) => {
    ctx.set('Location', '/should-be-dropped');
    throw new Error('database password is hunter2 at /srv/secret/path');
  });
  router.get('/koa-throw', (ctx) => ctx.throw(409, 'already there'));
  router.get('/rate', () => {
    throw new FactoryError('rate_limited', 'Slow down.', { headers: { 'Retry-After': '7' } });
  });
  router.post('/echo', async (ctx) => {
    ctx.body = { got: await readJsonBody(ctx, { limit: 64 }) };
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

test('a FactoryError becomes RFC 9457 problem+json with errors and headers', () =>
  withServer(async (url) => {
    const res = await fetch(url + '/validation?token=abc');
    assert.equal(res.status, 400);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(res.headers.get('x-extra'), 'yes');
    assert.deepEqual(await res.json(), {
      type: 'https://factory.dev/problems/invalid_request',
      title: 'Invalid request',
      status: 400,
      detail: 'The thing is not valid.',
      // '/validation' is no route of the runtime: echoed up to its first unknown segment (runtime/log.ts redactUrl).
      instance: '/[REDACTED]',
      code: 'invalid_request',
      error: 'The thing is not valid.',
      retryable: false,
      errors: [{ pointer: '/name', message: 'required' }],
    });
    const rate = await fetch(url + '/rate');
    assert.equal(rate.status, 429);
    assert.equal(rate.headers.get('retry-after'), '7');
    assert.equal(((await rate.json()) as { retryable: boolean }).retryable, true);
  }));

test('an unknown error is a bare 500, logged once with its stack', () =>
  withServer(async (url, logs) => {
    const res = await fetch(url + '/boom');
    assert.equal(res.status, 500);
    assert.equal(res.headers.get('location'), null);
    const text = await res.text();
    assert.ok(!text.includes('hunter2') && !text.includes('/srv/secret'), 'no internals in a 5xx');
    const body = JSON.parse(text) as { code: string; retryable: boolean };
    assert.equal(body.code, 'internal_error');
    assert.equal(body.retryable, true);
    const errors = logs.records().filter((r) => r.level === 50);
    assert.equal(errors.length, 1);
    assert.match(JSON.stringify(errors[0]), /at .*problem\.test\.ts/);
  }));

test('koa http-errors keep their status; unmatched routes and wrong methods are problems', () =>
  withServer(async (url) => {
    const c = await fetch(url + '/koa-throw');
    assert.equal(c.status, 409);
    assert.deepEqual(
      [((await c.clone().json()) as { code: string }).code, ((await c.json()) as { detail: string }).detail],
      ['conflict', 'already there'],
    );
    const nf = await fetch(url + '/nope');
    assert.equal(nf.status, 404);
    assert.equal(((await nf.json()) as { code: string }).code, 'resource_not_found');
    const m = await fetch(url + '/echo');
    assert.equal(m.status, 405);
    assert.equal(m.headers.get('allow'), 'POST');
    assert.equal(((await m.json()) as { code: string }).code, 'method_not_allowed');
  }));

test('readJsonBody: valid JSON, invalid UTF-8, invalid JSON, empty, too large', () =>
  withServer(async (url) => {
    const ok = await fetch(url + '/echo', { method: 'POST', body: '{"a":[1,"é"]}' });
    assert.deepEqual(await ok.json(), { got: { a: [1, 'é'] } });
    const cases: [string | Uint8Array, number, string][] = [
      [new Uint8Array([0x22, 0xff, 0x22]), 400, 'invalid_json'],
      ['{"a":', 400, 'invalid_json'],
      ['', 400, 'invalid_json'],
      ['"' + 'x'.repeat(100) + '"', 413, 'payload_too_large'],
    ];
    for (const [body, status, code] of cases) {
      const res = await fetch(url + '/echo', { method: 'POST', body });
      assert.equal(res.status, status);
      assert.equal(((await res.json()) as { code: string }).code, code);
    }
  }));

test('readJsonBody: a chunked body over the cap is a 413 without Content-Length', () =>
  withServer(async (url) => {
    const u = new URL(url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: '/echo', method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.write('"' + 'y'.repeat(50));
      req.write('y'.repeat(50) + '"');
      req.end();
    });
    assert.equal(status, 413);
  }));
