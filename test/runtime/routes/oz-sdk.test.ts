/**
 * A script written against Oz's TypeScript SDK (oz-agent-sdk 1.0.0-alpha.8) runs unchanged
 * against this runtime: the SDK itself drives the run API of a real runtime on port 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OzAPI from 'oz-agent-sdk';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, envYaml } from './runs-helpers.ts';

async function runtimeWithSdk(t: { after: (fn: () => Promise<void>) => void }, envs: string[] = ['sandbox']): Promise<{ rt: TestRuntime; client: OzAPI }> {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  // Runs stay QUEUED, so that listing and cancelling see every run in a known state.
  rt.services.executor!.pause();
  await applyEnvironments(rt, Object.fromEntries(envs.map((e) => [e, envYaml({ command: ['true'] })])));
  const { raw } = rt.store.keys.create({ name: 'ci-script', kind: 'agent', scopes: ['runs'] });
  // maxRetries 0: a failing request must fail the test, not be retried into a pass.
  return { rt, client: new OzAPI({ apiKey: raw, baseURL: `${rt.url}/api/v1`, maxRetries: 0 }) };
}

test('client.agent.run creates a run (POST /agent/run); retrieve shows Oz fields back', async (t) => {
  const { client } = await runtimeWithSdk(t);
  const created = await client.agent.run({
    prompt: 'Summarise the last commit',
    title: 'Nightly summary',
    skill: 'acme/payments:skills/summarise/SKILL.md',
    team: true,
    config: { environment_id: 'sandbox', model_id: 'auto', name: 'nightly', worker_host: 'warp' },
  });
  assert.match(created.run_id, /^run_/);
  assert.equal(created.state, 'QUEUED');

  const run = await client.agent.runs.retrieve(created.run_id);
  assert.equal(run.run_id, created.run_id);
  assert.equal(run.title, 'Nightly summary');
  assert.equal(run.prompt, 'Summarise the last commit');
  assert.equal(run.state, 'QUEUED');
  assert.deepEqual(run.agent_config, { environment_id: 'sandbox', model_id: 'auto', name: 'nightly', worker_host: 'warp' });
  assert.deepEqual(run.agent_skill, { name: 'acme/payments:skills/summarise/SKILL.md' });
  // This runtime's own fields keep their shape.
  const raw = run as unknown as Record<string, unknown>;
  assert.deepEqual(raw.config, { environment_id: 'sandbox' });
  assert.equal(raw.status_message, null);
  assert.equal(raw.session_link, null);
});

test('without config.environment_id a run takes the runtime\'s only environment, as Oz takes the team default', async (t) => {
  const { client } = await runtimeWithSdk(t);
  const created = await client.agent.run({ prompt: 'Look around' });
  const run = (await client.agent.runs.retrieve(created.run_id)) as unknown as { config: { environment_id: string } };
  assert.equal(run.config.environment_id, 'sandbox');
});

test('with several environments, a run without environment_id is a 400 that names them', async (t) => {
  const { client } = await runtimeWithSdk(t, ['a-env', 'b-env']);
  await assert.rejects(client.agent.run({ prompt: 'x' }), (err: unknown) => {
    assert.ok(err instanceof OzAPI.BadRequestError);
    assert.equal((err.error as { code?: string }).code, 'invalid_request');
    assert.match(String((err.error as { detail?: string }).detail), /config\.environment_id is required: this runtime has 2: a-env, b-env/);
    return true;
  });
});

test('runs.list pages with next_cursor, and filters by Oz parameters', async (t) => {
  const { client } = await runtimeWithSdk(t);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await client.agent.run({ prompt: `task ${i}`, title: i === 3 ? 'Fix the flaky test' : `task ${i}`, config: { environment_id: 'sandbox', name: i % 2 ? 'odd' : 'even', model_id: 'auto' } });
    ids.push(r.run_id);
  }
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.agent.runs.list({ limit: 2, ...(cursor ? { cursor } : {}) });
    seen.push(...page.runs.map((r) => r.run_id));
    assert.equal(page.page_info.has_next_page, Boolean(page.page_info.next_cursor));
    cursor = page.page_info.next_cursor ?? undefined;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.deepEqual(seen, [...ids].reverse());

  const odd = await client.agent.runs.list({ name: 'odd' });
  assert.deepEqual(odd.runs.map((r) => r.run_id), [ids[3], ids[1]]);
  assert.equal((await client.agent.runs.list({ model_id: 'auto' })).runs.length, 5);
  assert.deepEqual((await client.agent.runs.list({ q: 'FLAKY' })).runs.map((r) => r.run_id), [ids[3]]);
  // Multi-valued state, sent by the SDK as repeated parameters; PENDING and CLAIMED never happen here.
  assert.equal((await client.agent.runs.list({ state: ['QUEUED', 'PENDING'] })).runs.length, 5);
  assert.equal((await client.agent.runs.list({ state: ['PENDING', 'CLAIMED'] })).runs.length, 0);
  assert.equal((await client.agent.runs.list({ source: 'API' })).runs.length, 5);
  assert.equal((await client.agent.runs.list({ source: 'SLACK' })).runs.length, 0);
  assert.equal((await client.agent.runs.list({ artifact_type: 'PULL_REQUEST' })).runs.length, 0);
  assert.equal((await client.agent.runs.list({ creator: 'ci-script' })).runs.length, 5);
  assert.equal((await client.agent.runs.list({ updated_after: '2000-01-01T00:00:00Z' })).runs.length, 5);
  const oldest = await client.agent.runs.list({ limit: 2, sort_order: 'asc' } as Parameters<typeof client.agent.runs.list>[0]);
  assert.deepEqual(oldest.runs.map((r) => r.run_id), ids.slice(0, 2));
});

test('an unknown list parameter is a 400 that names it, never ignored', async (t) => {
  const { client } = await runtimeWithSdk(t);
  await assert.rejects(client.agent.runs.list({ colour: 'red' } as Parameters<typeof client.agent.runs.list>[0]), (err: unknown) => {
    assert.ok(err instanceof OzAPI.BadRequestError);
    assert.equal((err.error as { code?: string }).code, 'invalid_request');
    assert.match(JSON.stringify(err.error), /unknown parameter \\"colour\\"/);
    return true;
  });
});

test('runs.cancel cancels a queued run', async (t) => {
  const { client } = await runtimeWithSdk(t);
  const { run_id } = await client.agent.run({ prompt: 'Never mind', config: { environment_id: 'sandbox' } });
  await client.agent.runs.cancel(run_id);
  const run = await client.agent.runs.retrieve(run_id);
  assert.equal(run.state, 'CANCELLED');
  await assert.rejects(client.agent.runs.cancel(run_id), (err: unknown) => err instanceof OzAPI.APIError && err.status === 400);
  await assert.rejects(client.agent.runs.retrieve('run_doesnotexist'), (err: unknown) => err instanceof OzAPI.NotFoundError);
});

test('Oz images become attachments of the run; bad ones are a 400 naming the field', async (t) => {
  const { rt, client } = await runtimeWithSdk(t);
  const png = Buffer.from('89504e470d0a1a0a', 'hex');
  const { run_id } = await client.agent.run({ prompt: 'What is in the picture?', config: { environment_id: 'sandbox' }, images: [{ data: png.toString('base64'), mime_type: 'image/png' }] });
  assert.deepEqual(rt.store.runs.attachmentBytes(run_id), [{ name: 'image-1.png', bytes: png }]);
  await assert.rejects(
    client.agent.run({ prompt: 'x', config: { environment_id: 'sandbox' }, images: [{ data: '***', mime_type: 'image/bmp' as 'image/png' }] }),
    (err: unknown) => {
      assert.ok(err instanceof OzAPI.BadRequestError);
      const errors = (err.error as { errors: { pointer: string }[] }).errors.map((e) => e.pointer).sort();
      assert.deepEqual(errors, ['/images/0/data', '/images/0/mime_type']);
      return true;
    },
  );
});

test('title is always a string (the prompt\'s first line when none is given), lengths count characters, and a permanent 409 is not retried by the SDK', async (t) => {
  const { rt, client } = await runtimeWithSdk(t);
  const untitled = await client.agent.run({ prompt: '\n  Fix the login page  \nIt breaks on Safari.', config: { environment_id: 'sandbox' } });
  assert.equal((await client.agent.runs.retrieve(untitled.run_id)).title, 'Fix the login page');
  const long = await client.agent.run({ prompt: 'é'.repeat(200), config: { environment_id: 'sandbox' } });
  assert.equal((await client.agent.runs.retrieve(long.run_id)).title, 'é'.repeat(79) + '…');
  assert.ok((await client.agent.runs.list({})).runs.every((r) => typeof r.title === 'string'));

  // 256 emoji are 256 characters (512 UTF-16 units): the schema's maxLength and the route agree.
  const emoji = await client.agent.run({ prompt: 'p', title: '🙂'.repeat(256), config: { environment_id: 'sandbox' } });
  assert.equal((await client.agent.runs.retrieve(emoji.run_id)).title, '🙂'.repeat(256));
  await assert.rejects(client.agent.run({ prompt: 'p', title: '🙂'.repeat(257), config: { environment_id: 'sandbox' } }), OzAPI.BadRequestError);

  // An Idempotency-Key reused with another body: one 409, marked not to be retried.
  const { raw } = rt.store.keys.create({ name: 'retrying', kind: 'agent', scopes: ['runs'] });
  let requests = 0;
  const counting: typeof fetch = (input, init) => {
    requests++;
    return fetch(input, init);
  };
  // The SDK's own retry policy, as a script would have it: two retries of whatever it deems retryable.
  const sdk = new OzAPI({ apiKey: raw, baseURL: `${rt.url}/api/v1`, maxRetries: 2, fetch: counting });
  await sdk.agent.run({ prompt: 'once', config: { environment_id: 'sandbox' } }, { headers: { 'Idempotency-Key': 'k-1' } });
  requests = 0;
  await assert.rejects(sdk.agent.run({ prompt: 'other', config: { environment_id: 'sandbox' } }, { headers: { 'Idempotency-Key': 'k-1' } }), OzAPI.ConflictError);
  assert.equal(requests, 1);
  const res = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'other', config: { environment_id: 'sandbox' } }, headers: { 'Idempotency-Key': 'k-1' }, key: raw });
  assert.equal(res.status, 409);
  assert.equal(res.headers.get('x-should-retry'), 'false');
});

test('a run creation carries images past the 1 MiB of other routes, up to its own 16 MiB', async (t) => {
  const { rt, client } = await runtimeWithSdk(t);
  // Three images of 1.5 MB each: 6 MB of base64, as three screenshots would be.
  const images = [1, 2, 3].map((n) => Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(1_500_000, n)]));
  const { run_id } = await client.agent.run({ prompt: 'What changed between these?', config: { environment_id: 'sandbox' }, images: images.map((b) => ({ data: b.toString('base64'), mime_type: 'image/png' as const })) });
  assert.deepEqual(rt.store.runs.attachmentBytes(run_id).map((a) => a.bytes.length), [1_500_008, 1_500_008, 1_500_008]);
  const over = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'p', title: 'x'.repeat(17_000_000) } });
  assert.equal(over.status, 413);
  assert.equal(over.headers.get('x-should-retry'), 'false');
  // Only images may use the room: a prompt (which every view of the run carries) keeps 1 MiB.
  const prompt = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'p'.repeat(2_000_000), config: { environment_id: 'sandbox' } } });
  assert.equal(prompt.status, 413);
  assert.equal(((await prompt.json()) as { detail: string }).detail, 'The run request is larger than 1048576 bytes without its images; only images may take it up to 16777216 bytes.');
  // Another route keeps its 1 MiB.
  const secret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'big', value: 'x'.repeat(2_000_000) } });
  assert.equal(secret.status, 413);
});
