import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Router } from '@koa/router';
import { SIGNATURE_SCHEMES } from '../../../core/snapshot.ts';
import { DASHBOARD_ASSETS } from '../../../runtime/routes/dashboard.ts';
import { ROUTES } from '../../../runtime/routes/index.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';

/**
 * The dashboard (docs/dashboard.md): a public static page that shows nothing without a key and
 * calls only the public API. The page in a real browser: dashboard-browser.test.ts.
 */

const DIR = new URL('../../../runtime/dashboard/', import.meta.url);
/** The browser modules (app.js and what it imports), by file name, with their source. */
const MODULES = new Map(Object.keys(DASHBOARD_ASSETS).filter((f) => f.endsWith('.js')).map((f) => [f, readFileSync(new URL(f, DIR), 'utf8')]));
const ALL_JS = [...MODULES.values()].join('\n');
const TYPES: Record<string, RegExp> = { js: /^text\/javascript; charset=utf-8$/, css: /^text\/css; charset=utf-8$/ };

/** A template path of a module with sample values for its placeholders, without the query. */
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
    // Relative to the page, so that a base URL with a path (a proxy's prefix) keeps them under it.
    assert.match(html, /<script type="module" src="dashboard\/app\.js"><\/script>/);
    assert.match(html, /<link rel="stylesheet" href="dashboard\/style\.css">/);
    // The CSP forbids inline code; the page must not need it.
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) assert.match(tag, /\bsrc="/, tag);
    assert.doesNotMatch(html, /<style\b|\sstyle="|\son[a-z]+="/i);

    const head = await rt.fetch('/', { key: null, method: 'HEAD' });
    assert.equal(head.status, 200);
    assertSecurityHeaders(head, 'HEAD /');
  }));

test('the run session page, which loads the dashboard module session.js and holds the same key, has the same protections', () =>
  withRuntime(async (rt) => {
    const res = await rt.fetch('/sessions/run_x', { key: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
  }));

/** The modules a module imports: each specifier of its static `import … from '…'` statements. */
const importsOf = (source: string) => [...source.matchAll(/^import\s[^;]*?\bfrom\s+'([^']+)';/gm)].map((m) => m[1]);

test('the page names app.js and style.css; every listed asset is served as it is on disk, with its content type and the security headers', () =>
  withRuntime(async (rt) => {
    const html = await (await rt.fetch('/', { key: null })).text();
    const refs = [...html.matchAll(/(?:src|href)="(dashboard\/[^"]+)"/g)].map((m) => m[1]).sort();
    assert.deepEqual(refs, ['dashboard/app.js', 'dashboard/style.css']);
    assert.doesNotMatch(html, /(?:src|href)="\//, 'no root-absolute URL');
    assert.ok(MODULES.size >= 5, `${MODULES.size} modules listed`);
    for (const [name] of Object.entries(DASHBOARD_ASSETS)) {
      const path = `/dashboard/${name}`;
      const res = await rt.fetch(path, { key: null });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', TYPES[name.split('.').pop()!], path);
      assertSecurityHeaders(res, path);
      assert.equal(res.headers.get('cache-control'), 'no-cache', path);
      assert.equal(await res.text(), readFileSync(new URL(name, DIR), 'utf8'), path);
    }
  }));

test('the modules import only each other, by relative paths that are listed assets, and app.js or session.js reaches every one', () => {
  // Every script or stylesheet in the directory is listed (a new module must be added to the list).
  const onDisk = readdirSync(DIR).filter((f) => /\.(js|css)$/.test(f)).sort();
  assert.deepEqual(onDisk, Object.keys(DASHBOARD_ASSETS).sort());
  const reached = new Set<string>();
  const visit = (name: string) => {
    if (reached.has(name)) return;
    reached.add(name);
    const source = MODULES.get(name);
    assert.ok(source !== undefined, `${name} is not a listed module`);
    // Only static imports: a dynamic import() could name a file the list does not hold.
    assert.doesNotMatch(source, /\bimport\s*\(/, name);
    assert.equal(importsOf(source).length, source.match(/^import\s/gm)?.length ?? 0, `${name}: every import has a plain "from './x.js'"`);
    for (const spec of importsOf(source)) {
      const m = /^\.\/([a-z-]+\.js)$/.exec(spec);
      assert.ok(m, `${name} imports "${spec}": only ./<name>.js, which resolves to /dashboard/<name>.js`);
      visit(m[1]);
    }
  };
  // Two entry points: the dashboard (app.js) and the session page (session.js, runtime/routes/sessions.ts).
  visit('app.js');
  visit('session.js');
  assert.deepEqual([...reached].sort(), [...MODULES.keys()].sort(), 'every listed module is imported (no dead file)');
});

test('an unknown asset, or a path that tries to leave the directory, is a 404 problem', () =>
  withRuntime(async (rt) => {
    const paths = ['/dashboard/nope.js', '/dashboard/index.html', '/dashboard/', '/dashboard/..%2Froutes%2Fdashboard.ts', '/dashboard/%2e%2e%2fpackage.json', '/dashboard/app.js/x'];
    // Names close to the listed modules are not served either: the list is exact.
    paths.push('/dashboard/DOM.js', '/dashboard/dom.js.map', '/dashboard/dom', '/dashboard/.%2Fdom.js', '/dashboard/state.ts');
    for (const path of paths) {
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
    for (const path of ['/', ...Object.keys(DASHBOARD_ASSETS).map((f) => `/dashboard/${f}`)]) {
      // Sent with the admin key on purpose: the page is the same whoever asks.
      const text = await (await rt.fetch(path)).text();
      assert.ok(!text.includes(webhook.uid) && !text.includes('orders-zz9'), path);
    }

    // Every call in the modules, with its placeholders filled in, needs a key.
    const calls = [...ALL_JS.matchAll(/api\('(GET|POST|PUT|DELETE)', `([^`]+)`/g)].map((m) => ({
      method: m[1],
      path: samplePath(m[2]),
    }));
    assert.ok(calls.length >= 10, `found ${calls.length} API calls in the modules`);
    for (const { method, path } of calls) {
      const res = await rt.fetch(path, { method, key: null });
      assert.equal(res.status, 401, `${method} ${path}`);
    }
  }));

test('the modules call only /api/v1 routes of the runtime (the same API as the CLI) and never build HTML from strings', async () => {
  const rt = await startTestRuntime();
  try {
    const router = new Router();
    for (const register of ROUTES) register(router, rt.app.context.deps);
    const apiLayers = router.stack.filter((l) => typeof l.path === 'string' && l.path.startsWith('/api/'));
    const paths = [...ALL_JS.matchAll(/`(\/api\/[^`]*)`/g)].map((m) => samplePath(m[1]));
    assert.ok(paths.length >= 10);
    for (const p of paths) assert.ok(apiLayers.some((l) => l.match(p)), `${p} is not a route of the runtime`);
    // No second origin, and no fetch outside the api() helper.
    assert.doesNotMatch(ALL_JS, /https?:\/\//);
    assert.equal(ALL_JS.match(/\bfetch\(/g)?.length, 1);
    assert.match(MODULES.get('dom.js') ?? '', /\bfetch\(/);
  } finally {
    await rt.stop();
  }
  // Untrusted names and payloads are rendered with textContent and DOM nodes only.
  for (const [name, source] of MODULES) assert.doesNotMatch(source, /innerHTML|outerHTML|insertAdjacentHTML|createContextualFragment|document\.write|eval\(|new Function/, name);
});

test('the provider schemes offered by the create form are the docs/signatures.md list', () => {
  const m = /const SIGNATURE_SCHEMES = (\[[^\]]*\]);/.exec(MODULES.get('webhooks.js') ?? '');
  assert.ok(m, 'SIGNATURE_SCHEMES in webhooks.js');
  assert.deepEqual(JSON.parse(m[1].replace(/'/g, '"')), [...SIGNATURE_SCHEMES]);
});
