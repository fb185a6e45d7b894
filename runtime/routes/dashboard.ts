import { readFileSync } from 'node:fs';
import type { Context } from 'koa';
import { notFound } from '../../core/errors.ts';
import type { RouteModule } from './index.ts';
import { echoed } from '../../core/text.ts';

/**
 * The dashboard (docs/dashboard.md): a static page at `/` and its assets under `/dashboard/`. The
 * page is public and holds no data; everything it shows comes from the management and run APIs with
 * the Bearer key the user signs in with, exactly as the CLI calls them (nothing private is served
 * here).
 *
 * The files are read once, when the routes are registered, from a fixed list: no path from the
 * request ever reaches the file system.
 */

const DIR = new URL('../dashboard/', import.meta.url);

const JS = 'text/javascript; charset=utf-8';

/**
 * The assets the page loads, by file name, with their content types: the entry module app.js,
 * the modules it imports (relative `./name.js`, so they resolve to `/dashboard/<name>.js`), the
 * session page's module session.js (runtime/routes/sessions.ts) and the stylesheet. A module missing here is a 404 and the whole page fails to start.
 */
export const DASHBOARD_ASSETS: Readonly<Record<string, string>> = Object.freeze({
  'app.js': JS,
  'automations.js': JS,
  'deliveries.js': JS,
  'dom.js': JS,
  'runs.js': JS,
  'session.js': JS,
  'state.js': JS,
  'transcript.js': JS,
  'webhooks.js': JS,
  'style.css': 'text/css; charset=utf-8',
});

/**
 * No inline script or style, no framing, no third-party origin: data from the API is untrusted
 * (payloads, names), so even a rendering mistake cannot run script.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function secure(ctx: Context): void {
  ctx.set('Content-Security-Policy', DASHBOARD_CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Frame-Options', 'DENY');
  // Revalidate each time so that a runtime upgrade is seen at once; the files are small.
  ctx.set('Cache-Control', 'no-cache');
}

export const dashboardRoutes: RouteModule = (router) => {
  const page = readFileSync(new URL('index.html', DIR));
  const assets = new Map(Object.entries(DASHBOARD_ASSETS).map(([name, type]) => [name, { type, body: readFileSync(new URL(name, DIR)) }]));

  router.get('/', (ctx) => {
    secure(ctx);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  });

  router.get('/dashboard/:file', (ctx) => {
    const asset = assets.get(String(ctx.params.file));
    if (!asset) throw notFound(`The dashboard has no file "${echoed(String(ctx.params.file))}".`);
    secure(ctx);
    ctx.type = asset.type;
    ctx.body = asset.body;
  });
};
