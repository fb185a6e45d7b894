import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime } from '../helpers.ts';
import { browserSkip, signIn, withBrowserPage } from './chromium.ts';
import { GITHUB_UID, PR_OPENED, applyFactory, createSecret, deliverGithub, deliveryRuns } from '../automations/helpers.ts';

/** The delivery view's Replay button (docs/ingress.md#replay, docs/dashboard.md) in a real browser. */

const SKIP = browserSkip();

test('in a real browser, Replay on an Accepted delivery starts the matching runs again and lists them as replays', { skip: SKIP }, async () => {
  const rt = await startTestRuntime();
  try {
    await createSecret(rt);
    await applyFactory(rt, { review: { payload: { action: 'opened' } } });
    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.status, 202);
    // A Rejected entry: no Replay button.
    const bad = await fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Hub-Signature-256': 'sha256=00', 'X-GitHub-Delivery': 'bad-1' }, body: '{}' });
    assert.equal(bad.status, 401);

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const row = page.getByRole('region', { name: 'Webhooks', exact: true }).getByRole('row').filter({ hasText: 'github' });
      await row.getByRole('button', { name: 'Deliveries', exact: true }).click();
      const items = page.getByRole('region', { name: `Deliveries of github (${GITHUB_UID})` }).getByRole('article');
      await items.nth(1).waitFor();
      const [rejected, accepted] = [items.nth(0), items.nth(1)];
      assert.equal(await rejected.getByRole('button', { name: 'Replay', exact: true }).count(), 0);
      assert.equal(await accepted.getByRole('listitem').count(), 1);

      await accepted.getByRole('button', { name: 'Replay', exact: true }).click();
      // The list reloads with the original run and the replay.
      const replayed = page.getByRole('region', { name: `Deliveries of github (${GITHUB_UID})` }).getByRole('article').nth(1).getByText('replayed by admin');
      await replayed.waitFor();
    });
    const runs = (await deliveryRuns(rt, deliveryId)) as { run_id: string; replay?: { by: { name: string } } }[];
    assert.equal(runs.length, 2);
    assert.deepEqual(runs.map((r) => r.replay?.by.name ?? null), [null, 'admin']);
  } finally {
    await rt.stop();
  }
});
