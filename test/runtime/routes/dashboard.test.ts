import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Router } from '@koa/router';
import { SIGNATURE_SCHEMES } from '../../../core/snapshot.ts';
import { ROUTES } from '../../../runtime/routes/index.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';

/** The dashboard (SPEC 12): a public static page that shows nothing without a key and calls only the public API. */

const APP_JS = readFileSync(new URL('../../../runtime/dashboard/app.js', import.meta.url), 'utf8');
const CHROMIUM = '/usr/bin/chromium';

/** A template path of app.js with sample values for its placeholders, without the query. */
const samplePath = (template: string) => template.replace(/\$\{action\}/g, 'enable').replace(/\$\{[^}]+\}/g, 'x').replace(/\?.*$/, '');

function assertSecurityHeaders(res: Response, what: string): void {
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /^default-src 'self';/, what);
  assert.match(csp, /script-src 'self'(;|$)/, what);
  assert.match(csp, /frame-ancestors 'none'/, what);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, what);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer', what);
  assert.equal(res.headers.get('x-frame-options'), 'DENY', what);
}

/** Runs chromium to completion and returns its stdout; its whole process group is killed afterwards. */
function runChromium(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(CHROMIUM, args, { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const stop = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    // A safety net, not a timed assertion: a hung browser must not hang the suite.
    const timer = setTimeout(() => {
      stop();
      reject(new Error('chromium did not finish within 25 s'));
    }, 25_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      stop();
      if (code === 0) resolve(out);
      else reject(new Error(`chromium exited with ${code}`));
    });
  });
}

async function withRuntime(fn: (rt: TestRuntime) => Promise<void>): Promise<void> {
  const rt = await startTestRuntime();
  try {
    await fn(rt);
  } finally {
    await rt.stop();
  }
}

test('GET / serves the page with the security headers, and no inline script or style', () =>
  withRuntime(async (rt) => {
    const res = await rt.fetch('/', { key: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    assertSecurityHeaders(res, 'GET /');
    const html = await res.text();
    assert.match(html, /<script type="module" src="\/dashboard\/app\.js"><\/script>/);
    assert.match(html, /<link rel="stylesheet" href="\/dashboard\/style\.css">/);
    // The CSP forbids inline code; the page must not need it.
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) assert.match(tag, /\bsrc="/, tag);
    assert.doesNotMatch(html, /<style\b|\sstyle="|\son[a-z]+="/i);

    const head = await rt.fetch('/', { key: null, method: 'HEAD' });
    assert.equal(head.status, 200);
    assertSecurityHeaders(head, 'HEAD /');
  }));

test('every asset the page names is served with its content type and the security headers', () =>
  withRuntime(async (rt) => {
    const html = await (await rt.fetch('/', { key: null })).text();
    const refs = [...html.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1]).sort();
    assert.deepEqual(refs, ['/dashboard/app.js', '/dashboard/style.css']);
    const types: Record<string, RegExp> = { '/dashboard/app.js': /^text\/javascript; charset=utf-8/, '/dashboard/style.css': /^text\/css; charset=utf-8/ };
    for (const path of refs) {
      const res = await rt.fetch(path, { key: null });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', types[path], path);
      assertSecurityHeaders(res, path);
      assert.ok((await res.text()).length > 100, path);
    }
    assert.equal(await (await rt.fetch('/dashboard/app.js', { key: null })).text(), APP_JS);
  }));

test('an unknown asset, or a path that tries to leave the directory, is a 404 problem', () =>
  withRuntime(async (rt) => {
    for (const path of ['/dashboard/nope.js', '/dashboard/index.html', '/dashboard/', '/dashboard/..%2Froutes%2Fdashboard.ts', '/dashboard/%2e%2e%2fpackage.json', '/dashboard/app.js/x']) {
      const res = await rt.fetch(path, { key: null });
      assert.equal(res.status, 404, path);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, path);
      assert.equal(((await res.json()) as { code: string }).code, 'resource_not_found', path);
    }
  }));

test('the page is public but holds no data: the API it calls answers 401 without a key', () =>
  withRuntime(async (rt) => {
    const created = await rt.fetch('/api/v1/factories/shop/webhooks', { method: 'POST', json: { name: 'orders-zz9' } });
    assert.equal(created.status, 201);
    const { webhook } = (await created.json()) as { webhook: { uid: string } };
    for (const path of ['/', '/dashboard/app.js', '/dashboard/style.css']) {
      // Sent with the admin key on purpose: the page is the same whoever asks.
      const text = await (await rt.fetch(path)).text();
      assert.ok(!text.includes(webhook.uid) && !text.includes('orders-zz9'), path);
    }

    // Every call in app.js, with its placeholders filled in, needs a key.
    const calls = [...APP_JS.matchAll(/api\('(GET|POST|PUT|DELETE)', `([^`]+)`/g)].map((m) => ({
      method: m[1],
      path: samplePath(m[2]),
    }));
    assert.ok(calls.length >= 10, `found ${calls.length} API calls in app.js`);
    for (const { method, path } of calls) {
      const res = await rt.fetch(path, { method, key: null });
      assert.equal(res.status, 401, `${method} ${path}`);
    }
  }));

test('app.js calls only /api/v1 routes of the runtime (the same API as the CLI) and never builds HTML from strings', async () => {
  const rt = await startTestRuntime();
  try {
    const router = new Router();
    for (const register of ROUTES) register(router, rt.app.context.deps);
    const apiLayers = router.stack.filter((l) => typeof l.path === 'string' && l.path.startsWith('/api/'));
    const paths = [...APP_JS.matchAll(/`(\/api\/[^`]*)`/g)].map((m) => samplePath(m[1]));
    assert.ok(paths.length >= 10);
    for (const p of paths) assert.ok(apiLayers.some((l) => l.match(p)), `${p} is not a route of the runtime`);
    // No second origin, and no fetch outside the api() helper.
    assert.doesNotMatch(APP_JS, /https?:\/\//);
    assert.equal(APP_JS.match(/\bfetch\(/g)?.length, 1);
  } finally {
    await rt.stop();
  }
  // Untrusted names and payloads are rendered with textContent and DOM nodes only.
  assert.doesNotMatch(APP_JS, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
});

test('the provider schemes offered by the create form are the SPEC 7.3 list', () => {
  const m = /const SIGNATURE_SCHEMES = (\[[^\]]*\]);/.exec(APP_JS);
  assert.ok(m, 'SIGNATURE_SCHEMES in app.js');
  assert.deepEqual(JSON.parse(m[1].replace(/'/g, '"')), [...SIGNATURE_SCHEMES]);
});

test(
  'in a real browser the module runs under the CSP and shows the sign-in form',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install -y chromium); the browser check is skipped` },
  () =>
    withRuntime(async (rt) => {
      const profile = mkdtempSync(join(tmpdir(), 'factory-chromium-'));
      try {
        const stdout = await runChromium([
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          `--user-data-dir=${profile}`,
          '--virtual-time-budget=5000',
          '--dump-dom',
          `${rt.url}/`,
        ]);
        // The static HTML hides the sign-in form; only the running module shows it.
        assert.match(stdout, /<section id="signin" aria-labelledby="signin-h">/);
        assert.match(stdout, /<div id="app" hidden="">/);
        // The module filled the scheme list of the create form.
        assert.match(stdout, /<option value="standard-webhooks">standard-webhooks<\/option>/);
      } finally {
        rmSync(profile, { recursive: true, force: true });
      }
    }),
);
