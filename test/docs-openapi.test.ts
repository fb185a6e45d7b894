import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildOpenApi } from '../core/openapi.ts';

/**
 * docs/api.md and the OpenAPI document (docs/api.md#openapi) name the same routes: every route the
 * page names (in its tables, its prose and its http examples) is an operation of the document, and
 * every operation is named on the page. Routes compare by shape: `<run_id>` and `{run_id}` alike.
 */
const API_MD = readFileSync(resolve(import.meta.dirname, '../docs/api.md'), 'utf8');
const METHOD = /^(GET|POST|PUT|DELETE|PATCH) (\S+)$/;
const shape = (method: string, path: string) => `${method} ${path.split('?')[0].replace(/<[^>]+>|\{[^}]+\}/g, '{}')}`;
const served = (path: string) => path.startsWith('/api/') || path === '/healthz' || path === '/readyz';

/**
 * The routes of one line, reading the page's shorthand: after `GET /api/v1/x/a`, `/b` is
 * `GET /api/v1/x/b`, `/x/c` is `GET /api/v1/x/c` (from the segment it repeats), `POST .../t` is
 * `POST /api/v1/x/b/t`, and `[/<name>]` is the path with and without it.
 */
function routesOf(line: string): string[] {
  const out: string[] = [];
  let method: string | undefined;
  let path: string | undefined;
  const add = (m: string, p: string) => {
    const optional = /^(.*)\[(\/[^\]]+)\]$/.exec(p);
    for (const one of optional ? [optional[1], optional[1] + optional[2]] : [p]) out.push(shape(m, one));
  };
  for (const [, span] of line.matchAll(/`([^`]+)`/g)) {
    const full = METHOD.exec(span);
    if (full) {
      [method, path] = full[2].startsWith('.../') && path ? [full[1], path + full[2].slice(3)] : [full[1], full[2]];
      if (!served(path!)) [method, path] = [undefined, undefined];
      else add(method!, path!);
    } else if (method && path && /^\/[a-z]/.test(span) && !span.startsWith('/api/')) {
      const segments = path.split('/');
      const at = segments.lastIndexOf(span.split('/')[1]);
      path = (at > 0 ? segments.slice(0, at) : segments.slice(0, -1)).join('/') + span;
      add(method, path);
    }
  }
  return out;
}

/** Every route docs/api.md names: in code spans anywhere, and as request lines of its http examples. */
function routesOfPage(): Set<string> {
  const routes = new Set<string>();
  for (const line of API_MD.split('\n')) {
    for (const r of routesOf(line)) routes.add(r);
    const request = /^(GET|POST|PUT|DELETE|PATCH) (\/\S+)/.exec(line);
    if (request && served(request[2])) routes.add(shape(request[1], request[2]));
  }
  return routes;
}

const documented = () => {
  const paths = buildOpenApi().paths as Record<string, Record<string, unknown>>;
  return new Set(Object.entries(paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => shape(m.toUpperCase(), p))));
};

test('the page\'s shorthand is read as intended', () => {
  assert.deepEqual(routesOf('| `POST /api/v1/factories/<name>/plan`, `/apply` | manage |'), ['POST /api/v1/factories/{}/plan', 'POST /api/v1/factories/{}/apply']);
  assert.deepEqual(routesOf('`GET /api/v1/automations`, `/automations/<factory>/<name>`; `POST .../test`'), [
    'GET /api/v1/automations',
    'GET /api/v1/automations/{}/{}',
    'POST /api/v1/automations/{}/{}/test',
  ]);
  assert.deepEqual(routesOf('`GET /api/v1/secrets[/<name>]`, `PUT /x`, `grace_seconds`'), ['GET /api/v1/secrets', 'GET /api/v1/secrets/{}']);
  assert.deepEqual(routesOf('`GET /api/v1/agent/runs?state=FAILED`; `POST <url>`, `/agent/run`'), ['GET /api/v1/agent/runs']);
});

test('every route named in docs/api.md is an operation of the OpenAPI document', () => {
  const ops = documented();
  const missing = [...routesOfPage()].filter((r) => !ops.has(r));
  assert.deepEqual(missing, [], 'named in docs/api.md but not in core/openapi.ts OPERATIONS');
});

test('every operation of the OpenAPI document is named in docs/api.md', () => {
  const page = routesOfPage();
  const missing = [...documented()].filter((r) => !page.has(r));
  assert.deepEqual(missing, [], 'add these routes to docs/api.md (the management routes table, or the run API\'s sections)');
});
