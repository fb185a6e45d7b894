import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compile } from '../../../cli/compiler/compile.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { startTestRuntime } from '../helpers.ts';
import { browserSkip, signIn, withBrowserPage } from './chromium.ts';

/** The automations view's schedules (docs/dashboard.md): cron, next fire time and last run in UTC, Pause and Resume, in a real browser. */

const SKIP = browserSkip();

const sched = (cron: string, name: string) => `  - provider: schedule\n    event: cron_fired\n    schedule:\n      name: ${name}\n      cron: "${cron}"\n`;

test('in a real browser, the automations view shows each schedule with its next fire time and last run in UTC, and pauses and resumes it', { skip: SKIP }, async () => {
  // Monday 2026-03-02, half a minute before nine.
  const clock = new FakeClock('2026-03-02T08:59:30.000Z');
  const rt = await startTestRuntime({ clock });
  try {
    rt.services.executor!.pause();
    const { snapshot, diagnostics } = compile([
      { path: 'factory.yaml', text: 'name: tests\n' },
      { path: 'environments/e.yaml', text: 'agent:\n  command: ["true"]\n' },
      { path: 'automations/triage.md', text: `---\nenvironment: e\ntriggers:\n${sched('0 9 * * 1-5', 'mornings')}${sched('@daily', 'nightly')}---\nTriage.\n` },
      { path: 'automations/plain.md', text: `---\nenvironment: e\ntriggers:\n${sched('@hourly', 'hourly')}---\nCheck.\n` },
    ]);
    assert.ok(snapshot, JSON.stringify(diagnostics));
    const applied = await rt.fetch('/api/v1/factories/tests/apply', { method: 'POST', json: { snapshot } });
    assert.equal(applied.status, 200, await applied.text());
    // Armed, then mornings fires at nine: its last run is then, its next fire Tuesday at nine.
    rt.services.scheduler!.tick();
    clock.set('2026-03-02T09:00:00.000Z');
    assert.ok(rt.services.scheduler!.tick().some((r) => r.schedule?.schedule_id === 'tests/triage/mornings'));
    clock.set('2026-03-02T09:20:00.000Z');

    await withBrowserPage(`${rt.url}/`, async (page) => {
      await signIn(page, rt.adminKey);
      const region = page.getByRole('region', { name: 'Automations', exact: true });
      const row = region.getByRole('row').filter({ hasText: 'triage' });
      const mornings = row.getByRole('listitem', { name: 'Schedule mornings' });
      await mornings.waitFor();
      assert.equal(await region.getByRole('columnheader', { name: 'Schedules (UTC)' }).count(), 1);
      assert.equal(await mornings.getByText('0 9 * * 1-5', { exact: true }).count(), 1);
      assert.equal(await mornings.getByText('Next: 2026-03-03 09:00 UTC').count(), 1);
      assert.equal(await mornings.getByText('Last run: 2026-03-02 09:00 UTC').count(), 1);
      const nightly = row.getByRole('listitem', { name: 'Schedule nightly' });
      assert.equal(await nightly.getByText('Next: 2026-03-03 00:00 UTC').count(), 1);
      assert.equal(await nightly.getByText('Last run: never').count(), 1);
      // Another automation's schedule is in its own row.
      assert.equal(await row.getByRole('listitem', { name: 'Schedule hourly' }).count(), 0);
      const plain = region.getByRole('row').filter({ hasText: 'plain' });
      assert.equal(await plain.getByRole('listitem', { name: 'Schedule hourly' }).count(), 1, 'shown at all, so its absence above means something');

      await mornings.getByRole('button', { name: 'Pause schedule mornings', exact: true }).click();
      await mornings.getByText('paused').first().waitFor();
      await mornings.getByRole('button', { name: 'Resume schedule mornings', exact: true }).waitFor();
      assert.equal(await mornings.getByText('by admin at 2026-03-02 09:20 UTC').count(), 1);
      assert.equal(await mornings.getByText(/^Next:/).count(), 0);
      assert.deepEqual([...rt.store.schedules.paused().keys()], ['tests/triage/mornings']);

      await mornings.getByRole('button', { name: 'Resume schedule mornings', exact: true }).click();
      await mornings.getByRole('button', { name: 'Pause schedule mornings', exact: true }).waitFor();
      assert.equal(rt.store.schedules.paused().size, 0);
      // Armed again from now (09:20): next is Tuesday at nine.
      await mornings.getByText('Next: 2026-03-03 09:00 UTC').waitFor();
    });
  } finally {
    await rt.stop();
  }
});
