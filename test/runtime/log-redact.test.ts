import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Router } from '@koa/router';
import { LOGGED_ROUTES, redactUrl } from '../../runtime/log.ts';
import { prettyLine } from '../../runtime/log-pretty.ts';
import { ROUTES } from '../../runtime/routes/index.ts';
import { startTestRuntime, type TestRuntime } from './helpers.ts';
import { createHook, startIngressRuntime, type CreatedHook } from './ingress/helpers.ts';

/**
 * docs/ingress.md: a url_token never reaches a log line. redactUrl is the one place paths are made
 * loggable (access lines of Koa and the raw ingress adapter, problem `instance`, error logs), so
 * it must hide the token whatever shape the path has.
 */

const UID = 'wh_abcdefghijklmnopqrstuvwxyz';
/** A generated url_token: 32 random bytes, base64url. */
const TOKEN = 'Zm9vYmFyLWJhei1xdXV4LXNlY3JldC10b2tlbi14eXo';
const enc = (s: string) => s.replace(/[A-Za-z]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());

/** Each shape: a name and the URL as a request target. */
const SHAPES: [string, (t: string) => string][] = [
  ['plain', (t) => `/webhooks/w/${UID}/${t}`],
  ['double leading slash', (t) => `//webhooks/w/${UID}/${t}`],
  ['uppercase', (t) => `/WEBHOOKS/W/${UID}/${t}`],
  ['all uppercase', (t) => `/WEBHOOKS/W/${UID}/${t}`.toUpperCase()],
  ['mixed case', (t) => `/Webhooks/w/${UID}/${t}`],
  ['empty uid', (t) => `/webhooks/w//${t}`],
  ['no uid', (t) => `/webhooks/w/${t}`],
  ['slashes everywhere', (t) => `///webhooks//w///${UID}///${t}`],
  ['dot segments', (t) => `/webhooks/./w/./${UID}/./${t}`],
  ['parent segments', (t) => `/x/../webhooks/w/${UID}/${t}`],
  ['trailing segments', (t) => `/webhooks/w/${UID}/${t}/more/stuff`],
  ['trailing slash', (t) => `/webhooks/w/${UID}/${t}/`],
  ['query string', (t) => `/webhooks/w/${UID}/${t}?a=1`],
  ['token in the query', (t) => `/webhooks/w/${UID}?token=${t}`],
  ['fragment', (t) => `/webhooks/w/${UID}/${t}#x`],
  ['encoded slash before the token', (t) => `/webhooks/w/${UID}%2F${t}`],
  ['encoded slash, lowercase', (t) => `/webhooks/w/${UID}%2f${t}`],
  ['everything encoded', (t) => `/webhooks%2Fw%2F${UID}%2F${t}`],
  ['double-encoded slashes', (t) => `/webhooks%252Fw%252F${UID}%252F${t}`],
  ['encoded marker letters', (t) => `/${enc('webhooks')}/${enc('w')}/${UID}/${t}`],
  ['encoded token', (t) => `/webhooks/w/${UID}/${enc(t)}`],
  ['backslash', (t) => `/webhooks/w/${UID}\\${t}`],
  ['semicolon', (t) => `/webhooks/w/${UID};${t}`],
  ['under a prefix', (t) => `/factory/webhooks/w/${UID}/${t}`],
  ['absolute form', (t) => `http://example.com/webhooks/w/${UID}/${t}`],
  ['absolute form with user info', (t) => `https://user:${t}@example.com/webhooks/w/${UID}`],
  ['absolute form, uppercase', (t) => `HTTP://EXAMPLE.COM//WEBHOOKS/W/${UID}/${t}`],
  // Mangled targets that once reached the log with the token in plain text.
  ['semicolon after w', (t) => `/webhooks/w;/${UID}/${t}`],
  ['NUL after w', (t) => `/webhooks/w%00/${UID}/${t}`],
  ['no webhooks segment', (t) => `/w/${UID}/${t}`],
  ['uppercase W', (t) => `/webhooks/W/${UID}/${t}`],
  ['semicolon after the UID', (t) => `/webhooks/w/${UID};/${t}`],
  ['token with a query string', (t) => `/webhooks/w/${UID}/${t}?x`],
  ['absolute form with a port', (t) => `http://host:8080/webhooks/w/${UID}/${t}`],
  ['parameter after w', (t) => `/webhooks/w;x=1/${UID}/${t}`],
  ['encoded NUL before the UID', (t) => `/webhooks/w/%00${UID}/${t}`],
  ['UID only in a later segment', (t) => `/anything/else/${UID}/${t}`],
  ['no UID at all', (t) => `/${t}`],
  ['token after a known prefix', (t) => `/api/v1/${t}`],
  ['token as a webhook UID', (t) => `/api/v1/webhooks/${t}`],
  ['token as a delivery id', (t) => `/api/v1/webhooks/${UID}/deliveries/${t}`],
  ['token as a factory name', (t) => `/api/v1/factories/${t}/plan`],
  ['token as a dashboard file', (t) => `/dashboard/${t}`],
  ['token as a session', (t) => `/sessions/${t}`],
  ['token after an action', (t) => `/api/v1/webhooks/${UID}/enable/${t}`],
  ['tab-separated', (t) => `/webhooks/w/${UID}%09${t}`],
  ['token before the UID', (t) => `/webhooks/w/${t}/${UID}`],
];

/** True when any 8 consecutive characters of the token show in `text`, in any letter case. */
function leaks(text: string, token = TOKEN): boolean {
  const hay = text.toLowerCase();
  for (let i = 0; i + 8 <= token.length; i++) if (hay.includes(token.slice(i, i + 8).toLowerCase())) return true;
  return false;
}

test('redactUrl hides the token in every shape of path', () => {
  for (const [name, shape] of SHAPES) {
    const out = redactUrl(shape(TOKEN));
    assert.ok(!leaks(out), `${name}: ${shape(TOKEN)} → ${out}`);
    assert.ok(!out.includes('?') && !out.includes('#'), `${name}: ${out}`);
  }
});

test('redactUrl keeps what is safe to show', () => {
  const cases: [string, string][] = [
    [`/webhooks/w/${UID}/${TOKEN}`, `/webhooks/w/${UID}/[REDACTED]`],
    [`/webhooks/w/${UID}`, `/webhooks/w/${UID}`],
    [`/webhooks/w/${UID}?x=1`, `/webhooks/w/${UID}`],
    [`/webhooks/w/${UID}/`, `/webhooks/w/${UID}`],
    [`//WEBHOOKS/W/${UID}/${TOKEN}`, `/webhooks/w/${UID}/[REDACTED]`],
    [`/webhooks/w//${TOKEN}`, '/webhooks/w/[REDACTED]'],
    ['/webhooks/w/not-a-uid', '/webhooks/w/[REDACTED]'],
    ['/webhooks/w', '/webhooks/w'],
    ['/webhooks/w/', '/webhooks/w'],
    [`http://example.com/webhooks/w/${UID}/${TOKEN}`, `/webhooks/w/${UID}/[REDACTED]`],
    // Mangled ingress targets: whatever follows the first unknown segment, or a UID, goes.
    [`/webhooks/w;/${UID}/${TOKEN}`, '/webhooks/[REDACTED]'],
    [`/webhooks/w%00/${UID}/${TOKEN}`, '/webhooks/[REDACTED]'],
    [`/w/${UID}/${TOKEN}`, `/w/${UID}/[REDACTED]`],
    [`/webhooks/w/${UID};/${TOKEN}`, '/webhooks/w/[REDACTED]'],
    [`/webhooks/w/${UID}%2F${TOKEN}`, '/webhooks/w/[REDACTED]'],
    [`/x/../webhooks/w/${UID}/${TOKEN}`, '/[REDACTED]'],
    // The routes of the API, with their names and ids; free text (a delivery id) never.
    ['/', '/'],
    ['/healthz', '/healthz'],
    ['/dashboard/app.js', '/dashboard/app.js'],
    ['/api/v1/agent/runs?cursor=abc#f', '/api/v1/agent/runs'],
    ['/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz/transcript', '/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz/transcript'],
    ['/API/V1/Agent/Runs', '/api/v1/agent/runs'],
    ['/api/v1/keys/key_abcdefghijklmnopqrstuvwxyz/revoke', '/api/v1/keys/key_abcdefghijklmnopqrstuvwxyz/revoke'],
    ['/api/v1/factories/payments/plan', '/api/v1/factories/payments/plan'],
    ['/api/v1/automations/payments/review-pr/test', '/api/v1/automations/payments/review-pr/test'],
    ['/api/v1/secrets/github.Signing_1', '/api/v1/secrets/github.Signing_1'],
    [`/api/v1/webhooks/${UID}/rotate`, `/api/v1/webhooks/${UID}/rotate`],
    [`/api/v1/webhooks/${UID}/deliveries/build-42`, `/api/v1/webhooks/${UID}/deliveries/[REDACTED]`],
    [`/api/v1/webhooks/${UID}/deliveries/abc%2Fdef`, `/api/v1/webhooks/${UID}/deliveries/[REDACTED]`],
    // A name as long as the shortest token is not shown: a token could be in its place.
    [`/api/v1/factories/${'a'.repeat(31)}/plan`, `/api/v1/factories/${'a'.repeat(31)}/plan`],
    [`/api/v1/factories/${'a'.repeat(32)}/plan`, '/api/v1/factories/[REDACTED]/plan'],
    // Paths that are no route keep their route words only.
    ['/nothing/here', '/[REDACTED]'],
    ['/api/v1/webhoks', '/api/v1/[REDACTED]'],
    ['/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz/more/stuff', '/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz/[REDACTED]'],
    ['*', '/[REDACTED]'],
    ['/%E0%A4%A', '/[REDACTED]'],
  ];
  for (const [input, expected] of cases) assert.equal(redactUrl(input), expected, input);
});

test('every route of the router is one of LOGGED_ROUTES (else its paths are logged as [REDACTED])', async () => {
  const rt = await startTestRuntime();
  try {
    const router = new Router();
    for (const register of ROUTES) register(router, rt.app.context.deps);
    const shape = (path: string) => path.split('/').filter(Boolean).map((s) => (s.startsWith(':') || s.startsWith('{') ? ':' : s));
    const known = new Set(LOGGED_ROUTES.map((r) => shape(r).join('/')));
    const paths = router.stack.flatMap((l) => (Array.isArray(l.path) ? l.path : [l.path])).filter((p): p is string => typeof p === 'string');
    const missing = [...new Set(paths)].filter((p) => !known.has(shape(p).join('/')));
    // `/webhooks/w/{*rest}` is the ingress's catch-all; its shapes are /webhooks/w/:uid[/:rest].
    assert.deepEqual(missing.filter((p) => !p.includes('{*')), [], 'add these routes to LOGGED_ROUTES in runtime/log.ts');
  } finally {
    await rt.stop();
  }
});

throughTheServer();

/** Through the real server: every shape, several methods; no log line shows the live token. */
function throughTheServer(): void {
  let rt: TestRuntime;
  let hook: CreatedHook;
  before(async () => {
    rt = await startIngressRuntime();
    hook = await createHook(rt, 'redact', { name: 'url', auth_mode: 'url_token' });
  });
  after(() => rt.stop());

  const send = (method: string, path: string) =>
    new Promise<number>((resolve, reject) => {
      const req = request(rt.url, { method, path, headers: { 'Content-Type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(method === 'GET' ? undefined : '{"n":1}');
    });

  test('no access line, problem or error log shows a URL token, whatever the path (404, 405, 401, 202)', async () => {
    const token = hook.secret!;
    assert.ok(token.length >= 40);
    const realUid = hook.uid;
    const statuses = new Set<number>();
    for (const [name, shape] of SHAPES) {
      if (name === 'backslash') continue; // not a valid request target for node:http's client
      const target = shape(encodeURIComponent(token)).replace(UID, realUid);
      for (const method of ['POST', 'GET', 'PUT']) statuses.add(await send(method, target));
    }
    assert.ok(statuses.has(202) && statuses.has(404) && statuses.has(405), [...statuses].join(','));
    assert.ok(rt.logs.lines.length > SHAPES.length);
    assert.ok(!leaks(rt.logs.text, token), 'a log line shows the token');
    // The dev feed is these lines, rewritten for people.
    assert.ok(!leaks(rt.logs.lines.map((l) => prettyLine(l) ?? '').join('\n'), token), 'the dev feed shows the token');
  });
}
