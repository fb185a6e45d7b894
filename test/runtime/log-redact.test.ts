import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { redactUrl } from '../../runtime/log.ts';
import type { TestRuntime } from './helpers.ts';
import { createHook, startIngressRuntime, type CreatedHook } from './ingress/helpers.ts';

/**
 * SPEC 7.2: a url_token never reaches a log line. redactUrl is the one place paths are made
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
    [`/webhooks/w/${UID}/`, `/webhooks/w/${UID}/[REDACTED]`],
    [`//WEBHOOKS/W/${UID}/${TOKEN}`, `/webhooks/w/${UID}/[REDACTED]`],
    [`/webhooks/w//${TOKEN}`, '/webhooks/w/[REDACTED]'],
    ['/webhooks/w/not-a-uid', '/webhooks/w/[REDACTED]'],
    ['/webhooks/w', '/webhooks/w'],
    ['/webhooks/w/', '/webhooks/w'],
    [`http://example.com/webhooks/w/${UID}/${TOKEN}`, `/webhooks/w/${UID}/[REDACTED]`],
    ['/api/v1/agent/runs?cursor=abc#f', '/api/v1/agent/runs'],
    [`/api/v1/webhooks/${UID}/deliveries/abc%2Fdef`, `/api/v1/webhooks/${UID}/deliveries/abc%2Fdef`],
    ['/nothing/here', '/nothing/here'],
  ];
  for (const [input, expected] of cases) assert.equal(redactUrl(input), expected, input);
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
  });
}
