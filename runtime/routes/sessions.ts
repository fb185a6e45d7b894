import { randomBytes } from 'node:crypto';
import { FactoryError } from '../../core/errors.ts';
import { hasScope, tryAuthenticate } from '../http/auth.ts';
import type { RouteModule } from './index.ts';
import { findRun, runView, transcriptBody } from './runs.ts';

/**
 * `GET /sessions/<run_id>`, the run's `session_link` (SPEC 6): with a valid Bearer key (scope
 * `runs`), the run and its transcript as JSON; without one, an HTML page that asks for an API
 * key once, keeps it in sessionStorage (this tab only) and renders the transcript from the API.
 * The page is the same for every id, so it says nothing about which runs exist.
 */
export const sessionRoutes: RouteModule = (router, deps) => {
  router.get('/sessions/:id', (ctx) => {
    const principal = tryAuthenticate(ctx, deps.store);
    if (principal) {
      if (!hasScope(principal, 'runs')) throw new FactoryError('not_authorized', 'This API key does not have the "runs" scope.');
      const run = findRun(deps, String(ctx.params.id));
      ctx.body = { run: runView(run, deps.config.baseUrl), ...transcriptBody(deps, ctx, run) };
      return;
    }
    const nonce = randomBytes(16).toString('base64');
    ctx.set('Content-Security-Policy', `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = sessionPage(nonce);
  });
};

/** The page reads the run id from its own URL; every value is rendered with textContent. */
function sessionPage(nonce: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>factory run</title>
<style nonce="${nonce}">
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#222}
pre{background:#f6f6f6;padding:.5rem;overflow:auto;white-space:pre-wrap;margin:.25rem 0}
.ev{border-left:3px solid #ccc;padding-left:.6rem;margin:.6rem 0}.ev.command{border-color:#36c}.ev.state{border-color:#999}
.ev.message{border-color:#6a3}.ev.file_change{border-color:#c83}.meta{color:#666;font-size:12px}#err{color:#b00}
</style></head><body>
<h1 id="title">Run</h1>
<form id="login" hidden><p>This page shows a run's transcript. Enter an API key with the <code>runs</code> scope; it is kept in this tab only.</p>
<input id="key" type="password" size="50" autocomplete="off" placeholder="fk_…"> <button>Show transcript</button></form>
<p id="err"></p><p id="state" class="meta"></p><div id="events"></div>
<script nonce="${nonce}">
(() => {
  const id = decodeURIComponent(location.pathname.split('/').pop());
  const $ = (s) => document.getElementById(s);
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  let after = 0;
  const headers = () => ({ Authorization: 'Bearer ' + sessionStorage.getItem('factory.apiKey') });
  function render(ev) {
    const box = el('div', 'ev ' + ev.type);
    box.append(el('div', 'meta', '#' + ev.seq + ' ' + ev.time + ' ' + ev.type));
    const d = ev.data || {};
    if (ev.type === 'command') {
      const status = d.exit_code === null || d.exit_code === undefined ? 'signal ' + (d.signal || '?') : 'exit ' + d.exit_code;
      box.append(el('div', '', '$ ' + d.text + '  (' + (d.phase === 'agent' ? 'agent ended' : d.phase || 'command') + ': ' + status + ', ' + d.duration_ms + ' ms)'));
      if (d.output) box.append(el('pre', '', d.output));
    }
    else if (ev.type === 'output') box.append(el('pre', '', d.text));
    else if (ev.type === 'message') box.append(el('pre', '', (d.kind || '') + (d.tool ? ' ' + d.tool : '') + (d.text ? ': ' + d.text : '') + (d.input ? ' ' + d.input : '')));
    else if (ev.type === 'file_change') { box.append(el('div', '', d.kind + ' ' + (d.repo ? d.repo + '/' : '') + d.path)); if (d.diff) box.append(el('pre', '', d.diff)); }
    else if (ev.type === 'state') box.append(el('div', '', (d.from ? d.from + ' → ' : '') + (d.to || '') + (d.status_message ? ': ' + d.status_message : '')));
    else box.append(el('div', '', JSON.stringify(d)));
    $('events').append(box);
  }
  async function load() {
    const r = await fetch('/api/v1/agent/runs/' + encodeURIComponent(id), { headers: headers() });
    if (r.status === 401 || r.status === 403) { sessionStorage.removeItem('factory.apiKey'); $('login').hidden = false; $('err').textContent = (await r.json()).detail; return; }
    if (!r.ok) { $('err').textContent = (await r.json()).detail; return; }
    const run = await r.json();
    $('title').textContent = run.title || run.run_id;
    $('state').textContent = run.state + (run.status_message ? ' — ' + run.status_message : '') + ' · created ' + run.created_at;
    for (;;) {
      const t = await (await fetch('/api/v1/agent/runs/' + encodeURIComponent(id) + '/transcript?after=' + after, { headers: headers() })).json();
      t.events.forEach(render); after = t.next_after;
      if (!t.has_more) { if (!t.finished) setTimeout(load, 2000); else $('state').textContent = t.state + (run.status_message ? ' — ' + run.status_message : ''); return; }
    }
  }
  $('login').addEventListener('submit', (e) => { e.preventDefault(); sessionStorage.setItem('factory.apiKey', $('key').value.trim()); $('login').hidden = true; $('err').textContent = ''; load(); });
  if (sessionStorage.getItem('factory.apiKey')) load(); else $('login').hidden = false;
})();
</script></body></html>
`;
}
