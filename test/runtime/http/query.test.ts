import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime } from '../helpers.ts';
import { createHook } from '../ingress/helpers.ts';

/**
 * docs/api.md: nothing in a query is silently ignored. The list routes beside the runs list (which
 * checks its own) answer an unknown parameter, a repeated one and a boolean that is not one with a
 * 400 naming it, and the parameters they take still work.
 */
test('list routes refuse unknown, repeated and malformed query parameters, and take their own', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const hook = await createHook(rt, 'api-made', { name: 'hook' });
  const refused: [string, string, string][] = [
    [`/api/v1/webhooks/${hook.uid}/deliveries?foo=bar`, 'foo', 'unknown query parameter; this route takes limit, cursor'],
    [`/api/v1/webhooks/${hook.uid}/deliveries?limit=1&limit=abc`, 'limit', 'given more than once'],
    ['/api/v1/webhooks?include_deleted=yes', 'include_deleted', 'must be true or false, got "yes"'],
    ['/api/v1/webhooks?bogus=1', 'bogus', 'unknown query parameter; this route takes factory, include_deleted'],
    ['/api/v1/automations?factroy=api-made', 'factroy', 'unknown query parameter; this route takes factory'],
    ['/api/v1/agent/schedules?limit=0', 'limit', 'unknown query parameter; this route takes none'],
    ['/api/v1/keys?all=1', 'all', 'unknown query parameter; this route takes none'],
    ['/api/v1/secrets?x=1', 'x', 'unknown query parameter; this route takes none'],
  ];
  for (const [path, pointer, message] of refused) {
    const res = await rt.fetch(path);
    const problem = (await res.json()) as { code: string; errors: { pointer: string; message: string }[] };
    assert.equal(res.status, 400, path);
    assert.equal(problem.code, 'invalid_request', path);
    assert.deepEqual(problem.errors, [{ pointer, message }], path);
  }
  for (const path of [`/api/v1/webhooks/${hook.uid}/deliveries?limit=5`, '/api/v1/webhooks?factory=api-made&include_deleted=false', '/api/v1/automations?factory=api-made', '/api/v1/agent/schedules', '/api/v1/keys']) {
    assert.equal((await rt.fetch(path)).status, 200, path);
  }
  const { webhooks } = (await (await rt.fetch('/api/v1/webhooks?include_deleted=true')).json()) as { webhooks: { uid: string }[] };
  assert.deepEqual(webhooks.map((w) => w.uid), [hook.uid]);
});

test('a refused query says its first problem in the detail, on the transcript and the run list as on the other routes', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const run = rt.store.runs.create({ prompt: 'x', environmentId: 'missing', source: 'API', creator: { type: 'user', name: 'tester' } });
  const transcript = `/api/v1/agent/runs/${run.run_id}/transcript`;
  const refused: [string, string][] = [
    [`${transcript}?after=-1`, 'The query is not valid: after must be a non-negative integer seq, got "-1".'],
    [`${transcript}?after=abc`, 'The query is not valid: after must be a non-negative integer seq, got "abc".'],
    [`${transcript}?foo=1`, 'The query is not valid: foo: unknown query parameter; this route takes after.'],
    ['/api/v1/agent/runs?limit=0', 'The query is not valid: limit must be an integer from 1 to 100, got "0".'],
    ['/api/v1/keys?all=1', 'The query is not valid: all: unknown query parameter; this route takes none.'],
  ];
  for (const [path, detail] of refused) {
    const res = await rt.fetch(path);
    const problem = (await res.json()) as { detail: string; errors: unknown[] };
    assert.equal(res.status, 400, path);
    assert.equal(problem.detail, detail, path);
    assert.equal(problem.errors.length, 1, path);
  }
});
