import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { startTestRuntime } from '../helpers.ts';
import { browserSkip, signIn, withBrowserPage } from './chromium.ts';
import { AGENTS, applyEnvironments, createRun, envYaml, waitForRun } from './runs-helpers.ts';
import { eventually } from '../../helpers/eventually.ts';
import { listenLocally } from '../../helpers/listen.ts';

/** The run view's Notifications section (docs/api.md#run-notifications, docs/dashboard.md) in a real browser. */

const SKIP = browserSkip();

type Notification = { state: string; status: string; message_id: string; attempts: { attempt: number; at: string; status_code: number | null; error: string | null }[] };

test('in a real browser, a run\'s notifications show each attempt: the failed 500 and the delivered 204, never the secret', { skip: SKIP }, async () => {
  // A real receiver: the first request it gets is a 500, every later one a 204.
  let requests = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(++requests === 1 ? 500 : 204).end());
  });
  const url = `${await listenLocally(receiver)}/runs`;
  const rt = await startTestRuntime({ flags: { notifyRetryDelays: '50ms' } });
  try {
    await applyEnvironments(rt, { ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) });
    const secret = 'whsec_' + randomBytes(32).toString('base64');
    const { res, body } = await createRun(rt, { prompt: 'hello', config: { environment_id: 'ok' }, webhook: { url, secret } });
    assert.equal(res.status, 201);
    const runId = body.run_id as string;
    assert.equal((await waitForRun(rt, runId)).state, 'SUCCEEDED');
    const list = await eventually(
      async () => (((await (await rt.fetch(`/api/v1/agent/runs/${runId}`)).json()) as { notifications?: Notification[] }).notifications ?? []),
      `the notifications of ${runId}`,
      { until: (n) => n.length === 2 && n.every((x) => x.status === 'delivered') },
    );
    // Which state change met the 500 depends on the order they were sent in; the other went through at once.
    const retried = list.find((n) => n.attempts[0].status_code === 500)!;
    const direct = list.find((n) => n !== retried)!;
    assert.deepEqual(retried.attempts.map((a) => a.status_code), [500, 204]);
    assert.deepEqual(direct.attempts.map((a) => a.status_code), [204]);

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const row = page.getByRole('region', { name: 'Runs', exact: true }).getByRole('row').filter({ hasText: runId });
      await row.getByRole('button', { name: 'Transcript', exact: true }).click();

      const section = page.getByRole('region', { name: 'Notifications', exact: true });
      await section.getByText(`Sent to ${url}`).waitFor();
      const retriedItem = section.getByRole('article', { name: `${retried.state} notification`, exact: true });
      const directItem = section.getByRole('article', { name: `${direct.state} notification`, exact: true });
      await retriedItem.waitFor();
      assert.equal(await section.getByRole('article').count(), 2);

      for (const item of [retriedItem, directItem]) await item.getByText('delivered', { exact: true }).waitFor();
      await retriedItem.getByText(retried.message_id, { exact: true }).waitFor();
      // The header row and one row per attempt, in order, each with its time.
      const attempts = retriedItem.getByRole('row');
      assert.equal(await attempts.count(), 3);
      const [failed, delivered] = [attempts.nth(1), attempts.nth(2)];
      assert.deepEqual(await failed.getByRole('cell').allTextContents().then((c) => [c[0], c[2]]), ['1', `HTTP 500 — ${retried.attempts[0].error}`]);
      assert.match(retried.attempts[0].error ?? '', /answered 500/);
      assert.equal(await failed.locator('time').getAttribute('datetime'), retried.attempts[0].at);
      assert.deepEqual(await delivered.getByRole('cell').allTextContents().then((c) => [c[0], c[2]]), ['2', 'HTTP 204']);
      assert.equal(await delivered.locator('time').getAttribute('datetime'), retried.attempts[1].at);
      assert.equal(await directItem.getByRole('row').count(), 2);
      await directItem.getByRole('cell', { name: 'HTTP 204', exact: true }).waitFor();

      assert.ok(!(await page.content()).includes(secret.slice('whsec_'.length)), 'the secret is on the page');
    });
  } finally {
    await rt.stop();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  }
});
