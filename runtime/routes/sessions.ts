import { randomBytes } from 'node:crypto';
import { FactoryError } from '../../core/errors.ts';
import { hasScope, tryAuthenticate } from '../http/auth.ts';
import type { RouteModule } from './index.ts';
import { findRun, runView, transcriptBody } from './runs.ts';

/**
 * `GET /sessions/<run_id>`, the run's `session_link` (docs/api.md): with a valid Bearer key (scope
 * `runs`), the run and its transcript as JSON; without one, an HTML page that asks for an API
 * key once, keeps it in sessionStorage (this tab only) and renders the transcript from the API.
 * The page is the same for every id, so it says nothing about which runs exist.
 */
export const sessionRoutes: RouteModule = (router, deps) => {
  router.get('/sessions/:id', (ctx) => {
    const principal = tryAuthenticate(ctx, deps.store);
    if (principal) {
      if (!hasScope(principal, 'runs')) throw new FactoryError('not_authorized', 'This API key does not have the "runs" scope.');
      const run = findRun(deps, String(ctx.params.id), principal);
      ctx.body = { run: runView(run, deps.config.baseUrl), ...transcriptBody(deps, ctx, run) };
      return;
    }
    const nonce = randomBytes(16).toString('base64');
    ctx.set('Content-Security-Policy', `default-src 'none'; script-src 'self'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = sessionPage(nonce);
  });
};

/**
 * The page: markup and style only. Its script is the dashboard module session.js (with the
 * dashboard's transcript renderer), loaded from this origin; nothing inline runs.
 */
function sessionPage(nonce: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>factory run</title>
<style nonce="${nonce}">
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#222}
pre{background:#f6f6f6;padding:.5rem;overflow:auto;white-space:pre-wrap;margin:.25rem 0}
.ev{border-left:3px solid #ccc;padding-left:.6rem;margin:.6rem 0}.ev.command{border-color:#36c}.ev.state{border-color:#999}
.ev.message{border-color:#6a3}.ev.file_change{border-color:#c83}.muted,.meta{color:#666}.small,.meta{font-size:12px}
.mono{font-family:ui-monospace,monospace}#err{color:#b00}
</style>
<script type="module" src="../dashboard/session.js"></script></head><body>
<nav><a href="../">← the factory dashboard</a></nav>
<h1 id="title">Run</h1>
<form id="login" hidden><p>This page shows a run's transcript. Enter an API key with the <code>runs</code> scope (the admin key in the runtime's data dir, <code>.factory/admin.key</code>, has it); it is kept in this tab only.</p>
<input id="key" type="password" size="50" autocomplete="off" placeholder="fk_…"> <button>Show transcript</button></form>
<p id="err"></p><p id="state" class="meta"></p><div id="events"></div>
</body></html>
`;
}
