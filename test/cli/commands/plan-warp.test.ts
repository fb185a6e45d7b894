/**
 * A repo kept for Warp, planned and applied against a real runtime: what is not served is listed
 * as inactive, webhook `enabled` is honoured, and the automations with an environment are applied.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../../../cli/main.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { bufferIO } from '../helpers.ts';

test('plan lists what is validated but not served; apply honours webhook enabled', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  // The billing webhook is standard-webhooks: its secret must be a signing key (docs/signatures.md#configuring-each-scheme).
  for (const name of ['INTERNAL_CI_WEBHOOK_SECRET', 'BILLING_WEBHOOK_SECRET']) {
    const res = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name, value: name === 'BILLING_WEBHOOK_SECRET' ? `whsec_${Buffer.alloc(32, 7).toString('base64')}` : `${name.toLowerCase()}-value-0123456789abcdef0123456789` } });
    assert.equal(res.status, 201, await res.text());
  }
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };

  const plan = bufferIO(env);
  assert.equal(await runCli(['plan', 'test/fixtures/warp-full'], plan), 0, plan.err);
  assert.match(plan.out, /\+ automation weekday-triage +create/);
  assert.match(plan.out, /Validated, not served by this runtime/);
  const inactive = plan.out.slice(plan.out.indexOf('Validated, not served'));
  assert.match(inactive, /\n {2}factory\.yaml\n(?: {6}.*\n)* {6}\/mcpServers: MCP servers are not configured by this runtime\n/);
  assert.match(inactive, /\n {2}automations\/labeled-issue\/automation\.md\n(?: {6}.*\n)* {6}\/triggers\/0: github triggers are not served by this runtime\n/);
  assert.match(inactive, /\n {2}scorers\/tests-run\/scorer\.md\n {6}\(the file\): scorers are validated for shape/);

  const json = bufferIO(env);
  assert.equal(await runCli(['plan', 'test/fixtures/warp-full', '--json'], json), 0, json.err);
  const inactiveJson = (JSON.parse(json.out) as { inactive: { file: string; pointer: string; reason: string }[] }).inactive;
  assert.ok(inactiveJson.some((i) => i.file === 'factory.yaml' && i.pointer === '/cloudProviders'));

  const apply = bufferIO(env);
  assert.equal(await runCli(['apply', 'test/fixtures/warp-full'], apply), 0, apply.err);
  const hooks = rt.store.defs.listWebhooks('payments-factory');
  assert.deepEqual(hooks.map((w) => [w.name, w.enabled, w.signatureScheme]), [
    ['billing-events', false, 'standard-webhooks'],
    ['internal-ci', true, null],
  ]);
  assert.deepEqual(rt.store.defs.listAutomations('payments-factory').map((a) => [a.name, a.environment]), [
    ['ci-failed', 'sandbox'],
    ['labeled-issue', 'sandbox'],
    ['slack-mention', 'sandbox'],
    ['weekday-triage', 'sandbox'],
  ]);

  // A schedule-only automation can fire; one with only triggers of providers not served cannot.
  const listed = (await (await rt.fetch('/api/v1/automations?factory=payments-factory')).json()) as { automations: Record<string, any>[] };
  const byName = new Map(listed.automations.map((a) => [a.name, a]));
  assert.equal(byName.get('weekday-triage')!.silent, false);
  assert.deepEqual(byName.get('weekday-triage')!.schedules.map((x: { name: string }) => x.name), ['weekday-mornings', 'hourly-sweep']);
  assert.equal(byName.get('labeled-issue')!.silent, true);
  assert.match(byName.get('labeled-issue')!.silent_reason, /no webhook trigger or schedule/);
  assert.equal(byName.get('ci-failed')!.silent, false);

  // The runtime toggle turns billing-events on; the next apply sets it back to what the file says.
  const billing = hooks.find((w) => w.name === 'billing-events')!;
  rt.store.defs.updateWebhook(billing.uid, { enabled: true });
  const again = bufferIO(env);
  assert.equal(await runCli(['plan', 'test/fixtures/warp-full'], again), 0, again.err);
  assert.match(again.out, /~ webhook billing-events +update/);
  assert.match(again.out, /enabled: true -> false/);
});
