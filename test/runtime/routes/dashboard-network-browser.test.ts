import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Page, Response, Route } from 'playwright-core';
import { compile } from '../../../cli/compiler/compile.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { browserSkip, signIn, withBrowserPage } from './chromium.ts';
import { succeededRun } from './runs-helpers.ts';

/**
 * The dashboard and the session page on a slow or failing network (docs/dashboard.md), in a real
 * browser (chromium.ts): an answer that comes after the user moved on is dropped, and the session
 * page keeps following its run through failed polls. The page's requests are held or failed with
 * Playwright's routing; the runtime itself answers normally.
 */

const SKIP = browserSkip();

/** Holds the page's requests that `match` for 1.5 s, then lets them through. */
async function slow(page: Page, match: (url: URL) => boolean): Promise<void> {
  await page.route(match, async (route) => {
    await sleep(1500);
    await route.continue();
  });
}

/** Waits until the answer to a request that `match` has reached the page, and the page has had time to draw it. */
async function answered(page: Page, match: (url: URL) => boolean): Promise<void> {
  const res: Response = await page.waitForResponse((r) => match(new URL(r.url())));
  await res.finished();
  await page.evaluate('new Promise((resolve) => setTimeout(resolve, 300))');
}

async function createWebhook(rt: TestRuntime, name: string): Promise<{ uid: string; secret: string }> {
  const res = await rt.fetch('/api/v1/factories/shop/webhooks', { method: 'POST', json: { name, auth_mode: 'token', delivery_id_header: 'X-Request-Id' } });
  assert.equal(res.status, 201);
  const { webhook, secret } = (await res.json()) as { webhook: { uid: string }; secret: string };
  return { uid: webhook.uid, secret };
}

async function deliver(rt: TestRuntime, hook: { uid: string; secret: string }, id: string): Promise<void> {
  const res = await fetch(`${rt.url}/webhooks/w/${hook.uid}`, { method: 'POST', headers: { Authorization: `Bearer ${hook.secret}`, 'X-Request-Id': id, 'Content-Type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 202, id);
}

test('in a real browser a slow deliveries page of the webhook the user left, first or older, is not drawn under the next one', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const alpha = await createWebhook(rt, 'alpha');
    const beta = await createWebhook(rt, 'beta');
    // 21: a page of 20 and an older one.
    for (let i = 1; i <= 21; i++) await deliver(rt, alpha, `a-${i}`);
    await deliver(rt, beta, 'b-1');
    const alphaList = (url: URL) => url.pathname === `/api/v1/webhooks/${alpha.uid}/deliveries`;

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const rows = page.getByRole('region', { name: 'Webhooks', exact: true }).getByRole('row');
      const open = (name: string) => rows.filter({ hasText: name }).getByRole('button', { name: 'Deliveries', exact: true }).click();
      const betaItems = page.getByRole('region', { name: `Deliveries of beta (${beta.uid})`, exact: true }).getByRole('article');

      // Alpha's first page is slow; beta is chosen before it comes.
      await slow(page, (url) => alphaList(url) && !url.searchParams.has('cursor'));
      await open('alpha');
      await sleep(100);
      await open('beta');
      await betaItems.first().waitFor();
      await answered(page, alphaList);
      assert.deepEqual(await betaItems.getByRole('code').allTextContents(), ['b-1']);
      await page.unrouteAll({ behavior: 'wait' });

      // Alpha's older page is slow; beta is chosen before it comes.
      await open('alpha');
      const alphaItems = page.getByRole('region', { name: `Deliveries of alpha (${alpha.uid})`, exact: true }).getByRole('article');
      await alphaItems.nth(19).waitFor();
      await slow(page, (url) => alphaList(url) && url.searchParams.has('cursor'));
      await page.getByRole('button', { name: 'Older deliveries', exact: true }).click();
      await sleep(100);
      await open('beta');
      await betaItems.first().waitFor();
      await answered(page, (url) => alphaList(url) && url.searchParams.has('cursor'));
      assert.deepEqual(await betaItems.getByRole('code').allTextContents(), ['b-1']);
      assert.equal(await page.getByRole('button', { name: 'Older deliveries', exact: true }).isVisible(), false);
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser a slow runs page for a state filter the user left is not drawn under the next one', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo hi'] });
    const succeeded = (url: URL) => url.pathname === '/api/v1/agent/runs' && url.searchParams.get('state') === 'SUCCEEDED';

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const runs = page.getByRole('region', { name: 'Runs', exact: true });
      await runs.getByRole('row').filter({ hasText: runId }).waitFor();

      await slow(page, succeeded);
      const filter = runs.getByLabel('State', { exact: true });
      await filter.selectOption('SUCCEEDED');
      await sleep(100);
      await filter.selectOption('FAILED');
      await runs.getByText('No runs.', { exact: true }).waitFor();
      await answered(page, succeeded);
      assert.equal(await runs.getByText('No runs.', { exact: true }).isVisible(), true);
      assert.equal(await runs.getByRole('table').count(), 0, `the SUCCEEDED run ${runId} is not listed under FAILED`);
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser the session page shows a failed poll, tries again and clears the error once a poll succeeds', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo agent says hi'] });

    await withBrowserPage(
      `${rt.url}/sessions/${runId}`,
      async (page) => {
        // The first transcript request gets no answer, the second a 503; later ones go through.
        let tries = 0;
        await page.route(`**/api/v1/agent/runs/${runId}/transcript?after=0`, async (route) => {
          tries++;
          if (tries === 1) await route.abort('failed');
          else if (tries === 2) await route.fulfill({ status: 503, contentType: 'application/problem+json', body: JSON.stringify({ status: 503, detail: 'The runtime is starting.' }) });
          else await route.continue();
        });
        await page.getByPlaceholder('fk_…').fill(rt.adminKey);
        await page.getByRole('button', { name: 'Show transcript', exact: true }).click();
        await page.getByText('The runtime did not answer; is it running?', { exact: true }).waitFor();
        await page.getByText('The runtime is starting.', { exact: true }).waitFor();
        await page.getByText(/^SUCCEEDED · created /).waitFor();
        await page.getByText('agent says hi\n', { exact: true }).waitFor();
        assert.equal(await page.locator('#err').textContent(), '');
        assert.equal(tries, 3);
      },
      { tolerate: /Failed to load resource/ },
    );
  } finally {
    await rt.stop();
  }
});

/** Waits until the page has re-enabled every button: an action's button stays disabled until its answer was handled (drawn or dropped). */
async function handled(page: Page, ids: string[]): Promise<void> {
  // Selectors, not a predicate string: the page's CSP refuses to evaluate a string.
  for (const id of ids) await page.locator(`#${id}:not([disabled])`).waitFor({ state: 'attached' });
}

test('in a real browser an answer for the key signed out, in any section, is not drawn for the next key', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo hi'] });
    const hook = await createWebhook(rt, 'orders');
    await deliver(rt, hook, 'admin-delivery-1');
    const { snapshot, diagnostics } = compile([
      { path: 'factory.yaml', text: 'name: nightly\n' },
      { path: 'environments/e.yaml', text: 'agent:\n  command: ["true"]\n' },
      { path: 'automations/triage.md', text: '---\nenvironment: e\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule:\n      name: mornings\n      cron: "0 9 * * *"\n---\nTriage.\n' },
    ]);
    assert.ok(snapshot, JSON.stringify(diagnostics));
    assert.equal((await rt.fetch('/api/v1/factories/nightly/apply', { method: 'POST', json: { snapshot } })).status, 200);
    // The next user's key manages another factory only and has no runs scope: it sees no webhook, automation or run.
    const made = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'other-team', kind: 'personal', scopes: ['manage'], factories: ['other'] } });
    assert.equal(made.status, 201);
    const { key: otherKey } = (await made.json()) as { key: string };

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const webhooks = page.getByRole('region', { name: 'Webhooks', exact: true });
      const automations = page.getByRole('region', { name: 'Automations', exact: true });
      const runs = page.getByRole('region', { name: 'Runs', exact: true });
      await webhooks.getByRole('row').filter({ hasText: 'orders' }).getByRole('button', { name: 'Deliveries', exact: true }).click();
      await page.getByText('admin-delivery-1', { exact: true }).waitFor();
      await automations.getByRole('listitem', { name: 'Schedule mornings' }).waitFor();
      await runs.getByRole('row').filter({ hasText: runId }).waitFor();

      // From now on the admin key's requests are held until the next user has signed in.
      const held: Route[] = [];
      let allHeld: () => void = () => {};
      const heldFive = new Promise<void>((resolve) => (allHeld = resolve));
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      await page.route('**/api/v1/**', async (route) => {
        if (route.request().headers().authorization !== `Bearer ${rt.adminKey}`) return route.continue();
        held.push(route);
        // The webhooks, automations, schedules, runs and deliveries lists.
        if (held.length === 5) allHeld();
        await released;
        await route.continue();
      });
      const refreshes = ['webhooks-refresh', 'automations-refresh', 'runs-refresh', 'deliveries-refresh'];
      for (const id of refreshes) await page.locator(`#${id}`).click();
      await heldFive;

      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await signIn(page, otherKey);
      await runs.getByText('This API key does not have the "runs" scope.', { exact: true }).waitFor();
      await webhooks.getByText('No webhooks.', { exact: true }).waitFor();
      await automations.getByText('No automations.', { exact: true }).waitFor();

      release();
      await handled(page, refreshes);
      for (const gone of ['orders', 'triage', 'mornings', 'admin-delivery-1', runId, hook.uid]) assert.equal(await page.getByText(gone).count(), 0, `${gone} is the signed-out key's`);
      assert.equal(await runs.getByText('This API key does not have the "runs" scope.', { exact: true }).count(), 1);
      assert.equal(await webhooks.getByText('No webhooks.', { exact: true }).count(), 1);
      assert.equal(await page.getByRole('region', { name: 'Factories', exact: true }).getByRole('button', { name: /nightly|shop/ }).count(), 0);
    }, { tolerate: /status of 403 \(Forbidden\)/ });
  } finally {
    await rt.stop();
  }
});

test('in a real browser the transcript panel says a failed poll will be tried again, tries it a little later each time, and clears the error once a poll succeeds', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo agent says hi'] });

    await withBrowserPage(
      `${rt.url}/`,
      async (page) => {
        // The first transcript request gets no answer, the second a 503; later ones go through.
        const tries: number[] = [];
        await page.route(`**/api/v1/agent/runs/${runId}/transcript?after=0`, async (route) => {
          tries.push(Date.now());
          if (tries.length === 1) await route.abort('failed');
          else if (tries.length === 2) await route.fulfill({ status: 503, contentType: 'application/problem+json', body: JSON.stringify({ status: 503, detail: 'The runtime is restarting.' }) });
          else await route.continue();
        });
        await signIn(page, rt.adminKey);
        const runs = page.getByRole('region', { name: 'Runs', exact: true });
        await runs.getByRole('row').filter({ hasText: runId }).getByRole('button', { name: 'Transcript', exact: true }).click();
        const panel = page.getByRole('region', { name: `Transcript of ${runId}`, exact: true });
        await panel.getByText('The runtime did not answer; is it running? Trying again in 2 s.', { exact: true }).waitFor();
        await panel.getByText('The runtime is restarting. Trying again in 4 s.', { exact: true }).waitFor();
        await panel.getByText('agent says hi\n', { exact: true }).waitFor();
        await panel.getByText(/^SUCCEEDED · created /).waitFor();
        assert.equal(await page.locator('#transcript-error').textContent(), '');
        assert.equal(tries.length, 3);
        // Each retry waits longer than the one before (2 s, then 4 s).
        assert.ok(tries[2] - tries[1] > tries[1] - tries[0], JSON.stringify(tries));
      },
      { tolerate: /Failed to load resource/ },
    );
  } finally {
    await rt.stop();
  }
});

/** A reverse proxy that mounts `upstream` at `/factory/` and strips that prefix, as a base URL with a path implies. */
async function prefixProxy(upstream: string): Promise<{ url: string; close: () => Promise<void> }> {
  const target = new URL(upstream);
  const server = http.createServer((req, res) => {
    if (!req.url?.startsWith('/factory/')) {
      res.writeHead(404).end('not under /factory/');
      return;
    }
    const up = http.request({ host: target.hostname, port: target.port, path: req.url.slice('/factory'.length), method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/factory/`, close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }) };
}

test('in a real browser the dashboard works behind a proxy that mounts the runtime under a path: its assets, API calls and run links stay under it', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  const proxy = await prefixProxy(rt.url);
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo agent says hi'] });
    await createWebhook(rt, 'orders');

    await withBrowserPage(proxy.url, async (page) => {
      const outside: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(proxy.url)) outside.push(r.url());
      });
      await signIn(page, rt.adminKey);
      await page.getByRole('region', { name: 'Webhooks', exact: true }).getByRole('row').filter({ hasText: 'orders' }).waitFor();
      const runs = page.getByRole('region', { name: 'Runs', exact: true });
      const link = runs.getByRole('link', { name: runId, exact: true });
      assert.equal(await link.getAttribute('href'), `${proxy.url}sessions/${runId}`);
      await link.click();
      await page.getByText('agent says hi\n', { exact: true }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Open the session page', exact: true }).getAttribute('href'), `${proxy.url}sessions/${runId}`);
      // The session page itself, under the same path: its script and its API calls too.
      await page.goto(`${proxy.url}sessions/${runId}`);
      await page.getByText('agent says hi', { exact: false }).first().waitFor();
      assert.deepEqual(outside, [], 'every request went through the proxy, under its path');
    });
  } finally {
    await proxy.close();
    await rt.stop();
  }
});
