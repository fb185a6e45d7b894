import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startTestRuntime } from '../helpers.ts';
import { CHROMIUM, withBrowserPage, type BrowserPage } from './chromium.ts';
import { GITHUB_UID, SECRET_NAME, applyFactory, createSecret } from '../automations/helpers.ts';
import { applyEnvironments, envYaml, waitForRun } from './runs-helpers.ts';

/**
 * The dashboard (SPEC 12) in a real browser: the page loads its ES modules under the CSP, signs
 * in with a key, renders the webhooks, deliveries and payloads from the API, and signs out. Any
 * module that fails to load (a missing asset, a broken import) leaves the sign-in form hidden and
 * is reported by the page, so this test fails on it.
 */

const SKIP = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install -y chromium); the browser check is skipped`;

/** 100,000 levels of arrays (~200 KB, under the ingress cap): JSON.stringify overflows the stack on it. */
const DEEP = '['.repeat(100_000) + ']'.repeat(100_000);

/** Types the key into the page's sign-in form (shown only once the modules run) and submits it. */
async function signIn(page: BrowserPage, key: string): Promise<void> {
  await page.waitFor(`!document.getElementById('signin').hidden`, 'the sign-in form');
  await page.eval(`document.getElementById('signin-key').value = ${JSON.stringify(key)}; document.getElementById('signin-form').requestSubmit(); true`);
}

const text = (selector: string) => `document.querySelector(${JSON.stringify(selector)})?.textContent ?? ''`;

test('in a real browser the page signs in, shows webhooks, deliveries and payloads (also one too deep to lay out), and signs out', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    const created = await rt.fetch('/api/v1/factories/shop/webhooks', { method: 'POST', json: { name: 'orders', auth_mode: 'token', delivery_id_header: 'X-Request-Id' } });
    assert.equal(created.status, 201);
    const { webhook, secret } = (await created.json()) as { webhook: { uid: string; url: string }; secret: string };
    for (const [id, body] of [['plain-1', '{"hello":"<b>world</b>"}'], ['deep-1', DEEP]]) {
      const res = await fetch(`${rt.url}/webhooks/w/${webhook.uid}`, { method: 'POST', headers: { Authorization: `Bearer ${secret}`, 'X-Request-Id': id, 'Content-Type': 'application/json' }, body });
      assert.equal(res.status, 202, id);
    }

    await withBrowserPage(`${rt.url}/`, async (page) => {
      // The static HTML hides the sign-in form; only the running modules show it.
      await page.waitFor(`!document.getElementById('signin').hidden`, 'the sign-in form');
      assert.equal(await page.eval(`document.getElementById('app').hidden`), true);
      assert.ok((await page.eval<string[]>(`[...document.querySelectorAll('#c-scheme option')].map((o) => o.value)`)).includes('standard-webhooks'));

      await signIn(page, rt.adminKey);
      await page.waitFor(`document.querySelector('#webhooks-list table') && document.querySelector('#runs-list').childElementCount`, 'the webhooks and runs lists');
      assert.equal(await page.eval(`document.getElementById('signin').hidden`), true);
      assert.equal(await page.eval(`sessionStorage.getItem('factory.apiKey')`), rt.adminKey);
      assert.match(await page.eval<string>(text('#webhooks-list tbody tr')), new RegExp(`orders.*shop.*${webhook.uid}`));
      assert.match(await page.eval<string>(text('#factories-list')), /All factories.*shop · api · 1 webhook, 0 automations/);
      assert.equal(await page.eval(text('#runs-list')), 'No runs.');
      assert.equal(await page.eval(text('#automations-list')), 'No automations.');

      await page.eval(`[...document.querySelectorAll('#webhooks-list button')].find((b) => b.textContent === 'Deliveries').click(); true`);
      const ids = await page.waitFor<string[]>(`(() => { const c = [...document.querySelectorAll('#deliveries-list article.delivery code')].map((e) => e.textContent); return c.length === 2 && c; })()`, 'two deliveries');
      assert.deepEqual(ids, ['deep-1', 'plain-1'], 'newest first');

      // Show payload: laid out as JSON text (the markup in it stays text), and the deep one as a note.
      await page.eval(`document.querySelectorAll('#deliveries-list article.delivery')[1].querySelector('.actions button').click(); true`);
      const plain = await page.waitFor<string>(`document.querySelectorAll('#deliveries-list article.delivery')[1].querySelector('.payload pre')?.textContent`, 'the plain payload');
      assert.equal(plain, JSON.stringify({ hello: '<b>world</b>' }, null, 2));
      assert.equal(await page.eval(`document.querySelector('#deliveries-list b')`), null);

      await page.eval(`document.querySelectorAll('#deliveries-list article.delivery')[0].querySelector('.actions button').click(); true`);
      const note = await page.waitFor<string>(`document.querySelectorAll('#deliveries-list article.delivery')[0].querySelector('.payload')?.textContent`, 'the deep payload');
      assert.match(note, /^This payload \(195\.3 KiB\) is nested too deeply to show here\.$/);
      assert.equal(await page.eval(`document.querySelectorAll('#deliveries-list article.delivery')[0].querySelector('.actions button').textContent`), 'Hide payload');

      await page.eval(`document.getElementById('signout').click(); true`);
      await page.waitFor(`!document.getElementById('signin').hidden`, 'the sign-in form again');
      assert.equal(await page.eval(`sessionStorage.getItem('factory.apiKey')`), null);
      assert.equal(await page.eval(`document.getElementById('webhooks-list').childElementCount + document.getElementById('deliveries-list').childElementCount`), 0);
      assert.deepEqual(page.problems, []);
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser a definitions-managed webhook offers only what works: deliveries, the toggle, and how to rotate', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    await createSecret(rt);
    await applyFactory(rt, { review: {} });
    assert.equal((await rt.fetch('/api/v1/factories/ops/webhooks', { method: 'POST', json: { name: 'orders' } })).status, 201);
    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      await page.waitFor(`document.querySelectorAll('#webhooks-list tbody tr').length === 2`, 'both webhooks');
      const rows = await page.eval<{ text: string; buttons: string[]; toggle: boolean }[]>(`[...document.querySelectorAll('#webhooks-list tbody tr')].map((tr) => ({
        text: tr.textContent,
        buttons: [...tr.querySelectorAll('button')].map((b) => b.textContent).filter((t) => t !== 'Copy'),
        toggle: !!tr.querySelector('input[type=checkbox]'),
      }))`);
      const managed = rows.find((r) => r.text.includes(GITHUB_UID))!;
      const api = rows.find((r) => r.text.includes('orders'))!;
      assert.deepEqual(managed.buttons, ['Deliveries']);
      assert.ok(managed.toggle, 'enable/disable stays: it re-binds the current secret version (SPEC 7.6)');
      assert.match(managed.text, new RegExp(`To rotate: factory secret update ${SECRET_NAME}, then re-apply or toggle Enabled\\.`));
      assert.deepEqual(api.buttons, ['Deliveries', 'Rotate', 'Delete']);
      assert.deepEqual(page.problems, []);
    });
  } finally {
    await rt.stop();
  }
});

test('in a real browser the session page asks for a key, then shows the transcript in words', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    await applyEnvironments(rt, { ok: envYaml({ command: ['/bin/sh', '-c', 'echo agent says hi'], setup: ['echo from setup'] }) });
    const created = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'Say hi', config: { environment_id: 'ok' } } });
    assert.equal(created.status, 201);
    const { run_id: runId } = (await created.json()) as { run_id: string };
    assert.equal((await waitForRun(rt, runId)).state, 'SUCCEEDED');

    await withBrowserPage(`${rt.url}/sessions/${runId}`, async (page) => {
      await page.waitFor(`!document.getElementById('login').hidden`, 'the key form');
      assert.equal(await page.eval(`document.getElementById('events').childElementCount`), 0);
      await page.eval(`document.getElementById('key').value = ${JSON.stringify(rt.adminKey)}; document.getElementById('login').requestSubmit(); true`);
      const lines = await page.waitFor<string[]>(
        `(() => { const l = [...document.querySelectorAll('#events .ev')].map((e) => e.children[1]?.textContent ?? ''); return l.some((t) => t === 'SUCCEEDED') && l; })()`,
        'the transcript to its end',
      );
      assert.deepEqual(
        lines.map((l) => l.replace(/\d+ ms/, 'N ms')),
        ['QUEUED → INPROGRESS', '$ echo from setup  (setup: exit 0, N ms)', 'agent says hi\n', "$ /bin/sh -c echo agent says hi  (agent ended: exit 0, N ms)", 'SUCCEEDED'],
      );
      assert.match(await page.eval<string>(`document.getElementById('state').textContent`), /^SUCCEEDED/);
      assert.deepEqual(page.problems, []);
    });
  } finally {
    await rt.stop();
  }
});
