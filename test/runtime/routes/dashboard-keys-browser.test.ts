import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { startTestRuntime } from '../helpers.ts';
import { browserSkip, signIn, storedKey, withBrowserPage } from './chromium.ts';
import { succeededRun } from './runs-helpers.ts';

/**
 * The API key in the dashboard and the session page (docs/dashboard.md#signing-in), in a real
 * browser (chromium.ts): what is refused before it is sent, and what a key's answers do to it.
 */

const SKIP = browserSkip();

/** Counts the page's requests to the API from now on. */
function apiRequests(page: Page): () => number {
  let n = 0;
  page.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/api/')) n++;
  });
  return () => n;
}

const ZWSP = '\u200b';
/** The sentence for the admin key (fk_ + 43 characters) with a zero-width space after it. */
const invisible = 'That is not an API key: it has an invisible character (U+200B) at character 47, and a key has only letters, digits and - _ . ~ + / =. Copy it again from where it is kept.';

test('in a real browser the dashboard refuses a key with a character no key has, by name, before sending it, and trims the blanks around a key', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    await withBrowserPage(`${rt.url}/`, async (page) => {
      const requests = apiRequests(page);
      const error = page.getByRole('alert').filter({ hasText: 'That is not an API key' });
      await signIn(page, rt.adminKey + ZWSP);
      await error.waitFor();
      assert.equal(await error.textContent(), invisible);
      await signIn(page, 'fk_abc def');
      await error.filter({ hasText: 'it has a space at character 7,' }).waitFor();
      await signIn(page, '   ');
      await page.getByText('Enter an API key (fk_…).', { exact: true }).waitFor();
      assert.equal(await storedKey(page), null);
      assert.equal(requests(), 0, 'nothing was sent');
      assert.equal(await page.getByRole('heading', { name: 'Sign in', exact: true }).isVisible(), true);

      // A key stored before (another version of the page) is not sent either: it signs out with the reason.
      await page.evaluate(`sessionStorage.setItem('factory.apiKey', ${JSON.stringify(rt.adminKey + ZWSP)})`);
      await page.reload();
      await page.getByText(invisible, { exact: true }).waitFor();
      assert.equal(await page.getByRole('heading', { name: 'Sign in', exact: true }).isVisible(), true);
      assert.equal(await page.getByText('The runtime did not answer', { exact: false }).count(), 0);
      assert.equal(await storedKey(page), null);
      assert.equal(requests(), 0, 'nothing was sent');

      await signIn(page, `  ${rt.adminKey}  `);
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
      assert.equal(await storedKey(page), rt.adminKey);
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser the session page refuses an empty key or one with a character no key has, and a stored one asks for another instead of retrying', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo agent says hi'] });
    await withBrowserPage(`${rt.url}/sessions/${runId}`, async (page) => {
      const requests = apiRequests(page);
      const key = page.getByPlaceholder('fk_…');
      const show = page.getByRole('button', { name: 'Show transcript', exact: true });
      await key.fill(rt.adminKey + ZWSP);
      await show.click();
      await page.getByText(invisible, { exact: true }).waitFor();
      await key.fill('  ');
      await show.click();
      await page.getByText('Enter an API key (fk_…).', { exact: true }).waitFor();
      assert.equal(await key.isVisible(), true);
      assert.equal(await storedKey(page), null);

      await page.evaluate(`sessionStorage.setItem('factory.apiKey', ${JSON.stringify(rt.adminKey + ZWSP)})`);
      await page.reload();
      await page.getByText(invisible, { exact: true }).waitFor();
      await key.waitFor();
      assert.equal(await storedKey(page), null);
      assert.equal(requests(), 0, 'nothing was sent');

      await key.fill(rt.adminKey);
      await show.click();
      await page.getByText('agent says hi\n', { exact: true }).waitFor();
      assert.equal(await page.locator('#err').textContent(), '');
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser a key without the runs scope is told so on the session page and stays signed in on the dashboard; a refused key signs out', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const runId = await succeededRun(rt, { command: ['/bin/sh', '-c', 'echo agent says hi'] });
    const res = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'manager', kind: 'personal', scopes: ['manage'] } });
    assert.equal(res.status, 201);
    const { key: manageOnly } = (await res.json()) as { key: string };

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, manageOnly);
      await page.getByRole('region', { name: 'Runs', exact: true }).getByText('This API key does not have the "runs" scope.', { exact: true }).waitFor();
      // The same tab opens the session page, as the dashboard's run links do.
      await page.goto(`${rt.url}/sessions/${runId}`);
      await page.getByText('This API key does not have the "runs" scope.', { exact: true }).waitFor();
      await page.getByPlaceholder('fk_…').waitFor();
      assert.equal(await storedKey(page), manageOnly);
      await page.goBack();
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
      assert.equal(await page.getByRole('heading', { name: 'Sign in', exact: true }).isVisible(), false);

      // A key the runtime does not know is forgotten by the session page.
      await page.evaluate(`sessionStorage.setItem('factory.apiKey', 'fk_${'x'.repeat(43)}')`);
      await page.goto(`${rt.url}/sessions/${runId}`);
      await page.getByPlaceholder('fk_…').waitFor();
      assert.equal(await storedKey(page), null);
    }, { tolerate: /status of 40[13] \((Forbidden|Unauthorized)\)/ });
  } finally {
    await rt.stop();
  }
});
