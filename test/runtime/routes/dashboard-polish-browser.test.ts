import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { startTestRuntime } from '../helpers.ts';
import { browserSkip, signIn, withBrowserPage } from './chromium.ts';
import { applyEnvironments, createRun, envYaml, succeededRun, waitForRun } from './runs-helpers.ts';

/**
 * What a new user met in the browser (docs/dashboard.md): the sign-in form says where a key is, a
 * webhook URL wraps only between its parts on a narrow screen, and the session page quotes the
 * agent's argv and links back to the dashboard. Read in a real Chromium (chromium.ts).
 */

const SKIP = browserSkip();

/** How wide the page's content is: wider than the viewport means it scrolls sideways. */
const pageWidth = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth');

test('in a real browser the sign-in form says where a key is, and a long URL wraps only after a slash', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const created = await rt.fetch('/api/v1/factories/a-factory-with-a-long-name/webhooks', { method: 'POST', json: { name: 'orders-from-the-shop', auth_mode: 'url_token' } });
    assert.equal(created.status, 201);
    const { webhook, url } = (await created.json()) as { webhook: { url: string }; url: string };
    assert.equal((await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status, 202);

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await page.setViewportSize({ width: 420, height: 900 });
      const where = page.getByText('Where to find one:');
      await where.waitFor();
      assert.match(await where.innerText(), /admin\.key in its data dir \(cat \.factory\/admin\.key where you ran npm start/);

      await signIn(page, rt.adminKey);
      const code = page.locator('#webhooks-list code.wrap');
      await code.waitFor();
      // The line boxes of the whole URL, and of each part between wrap points (its text nodes).
      // A string, not a function: tsx's compiled functions name helpers the page does not have.
      const layout = await page.evaluate<{ text: string; lines: number; parts: string[]; split: string[] }>(`(() => {
        const el = document.querySelector('#webhooks-list code.wrap');
        const lines = (node) => {
          const range = document.createRange();
          range.selectNodeContents(node);
          // A text node that ends where a line ends also reports an empty box on the next line.
          return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
        };
        const parts = [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE);
        return { text: el.textContent, lines: lines(el), parts: parts.map((p) => p.textContent), split: parts.filter((p) => lines(p) > 1).map((p) => p.textContent) };
      })()`);
      assert.equal(layout.text, webhook.url, 'the text (and so its copy) is the URL, unchanged');
      assert.ok(layout.lines >= 2, `at 420 px the URL takes several lines (${layout.lines})`);
      assert.deepEqual(layout.split, [], `no part is broken inside: ${JSON.stringify(layout.parts)}`);
      assert.ok(layout.parts.every((p, i) => i === layout.parts.length - 1 || /[/?&=]$/.test(p)), 'wrap points only after / ? & =');
      assert.equal(await pageWidth(page), 420, 'the webhooks fit');

      // A delivery without an id header is named by its body hash: 71 characters without a break.
      await page.getByRole('button', { name: 'Deliveries', exact: true }).click();
      const id = page.getByRole('region', { name: /^Deliveries of orders-from-the-shop/ }).getByRole('code');
      await id.waitFor();
      assert.match((await id.textContent()) ?? '', /^sha256:[0-9a-f]{64}$/);
      assert.equal(await pageWidth(page), 420, 'the sha256: delivery id wraps instead of widening the page');
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser the session page quotes the agent argv as a shell would and links back to the dashboard', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', "echo 'quoted' words"] });

    await withBrowserPage(`${rt.url}/sessions/${runId}`, async (page) => {
      const key = page.getByPlaceholder('fk_…');
      await key.waitFor();
      assert.match(await page.locator('#login').innerText(), /\.factory\/admin\.key/);
      await key.fill(rt.adminKey);
      await page.getByRole('button', { name: 'Show transcript', exact: true }).click();
      const agent = page.getByText(/^\$ \/bin\/sh -c /);
      await agent.waitFor();
      assert.match((await agent.textContent()) ?? '', /^\$ \/bin\/sh -c 'echo '\\''quoted'\\'' words' {2}\(agent ended: exit 0, \d+ ms\)$/);

      const back = page.getByRole('link', { name: '← the factory dashboard' });
      assert.equal(await back.getAttribute('href'), '../');
      await back.click();
      await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/');
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser a run\'s output reads without its colour codes, other control characters as \\xNN, and a Ctrl+click on a run opens its session page in a new tab', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    // Red text, an OSC 8 hyperlink (ended by ESC \), a bell and a CRLF; the setup prints bold.
    const runId = await succeededRun(rt, {
      command: ['/bin/sh', '-c', "printf '\\033[31mRED\\033[0m \\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\ bell\\007 a\\r\\nb\\n'"],
      setup: ["printf '\\033[1msetup\\033[0m\\n'"],
    });
    const output = 'RED \\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\ bell\\x07 a\nb\n';

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const link = page.getByRole('region', { name: 'Runs', exact: true }).getByRole('link', { name: runId, exact: true });
      const [tab] = await Promise.all([page.context().waitForEvent('page'), link.click({ modifiers: ['Control'] })]);
      await tab.waitForLoadState();
      assert.equal(new URL(tab.url()).pathname, `/sessions/${runId}`);
      await tab.close();
      assert.equal(await page.locator('#transcript').isVisible(), false, 'the Ctrl+click left this page as it was');

      await link.click();
      const transcript = page.getByRole('region', { name: `Transcript of ${runId}`, exact: true });
      const agent = transcript.getByText(/^RED /);
      await agent.waitFor();
      assert.equal(await agent.textContent(), output);
      assert.equal(await transcript.getByText('setup\n', { exact: true }).count(), 1);

      await page.goto(`${rt.url}/sessions/${runId}`);
      await page.getByText(/^SUCCEEDED · created /).waitFor();
      assert.equal(await page.getByText(/^RED /).textContent(), output);
      assert.equal(await page.getByText('setup\n', { exact: true }).count(), 1);
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser a session address whose %-escapes do not decode says it is not a run id', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    await withBrowserPage(`${rt.url}/sessions/%E0%A4%A`, async (page) => {
      await page.getByText('This address does not name a run: “%E0%A4%A” is not a run id.', { exact: true }).waitFor();
      assert.equal(await page.getByPlaceholder('fk_…').isVisible(), false, 'no key is asked for a page that cannot show a run');
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser a run title with control characters reads in the runs table as on the session page: colour dropped, the rest as \\xNN', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    await applyEnvironments(rt, { ok: envYaml({ command: ['true'] }) });
    const { res, body } = await createRun(rt, { prompt: 'Say hi', title: 'deploy \u001b[31mred\u001b[0m\u0007 done\u001b]0;x', config: { environment_id: 'ok' } });
    assert.equal(res.status, 201);
    const runId = body.run_id as string;
    await waitForRun(rt, runId);
    const title = 'deploy red\\x07 done\\x1b]0;x';

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const row = page.getByRole('region', { name: 'Runs', exact: true }).getByRole('row').filter({ hasText: runId });
      await row.getByRole('cell', { name: title, exact: true }).waitFor();
      await page.goto(`${rt.url}/sessions/${runId}`);
      // The heading reads "Run" until the run has loaded.
      await page.getByRole('heading', { level: 1 }).filter({ hasNotText: /^Run$/ }).waitFor();
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), title);
    });
  } finally {
    await rt.stop();
  }
});
