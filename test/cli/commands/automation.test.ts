import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runBuffered } from '../helpers.ts';
import { startTestRuntime, type TestRuntime } from '../../runtime/helpers.ts';
import { FACTORY, GITHUB_UID, OTHER_UID, PR_OPENED, applyFactory, createSecret, deliverGithub } from '../../runtime/automations/helpers.ts';

/** `factory automation list | test` against a real runtime, in-process and as a child process. */
describe('factory automation', () => {
  let rt: TestRuntime;
  let env: Record<string, string>;
  let opened: string;
  let closed: string;

  const run = (...args: string[]) => runBuffered(['automation', ...args], env);

  before(async () => {
    rt = await startTestRuntime();
    (rt.services.executor as { pause(): void } | undefined)?.pause();
    env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
    await createSecret(rt);
    await applyFactory(rt, {
      review: { payload: { action: ['opened', 'reopened'], pull_request: { draft: false } } },
      orphan: { uids: [OTHER_UID] },
      off: { enabled: false },
    });
    opened = (await deliverGithub(rt, PR_OPENED)).deliveryId;
    closed = (await deliverGithub(rt, Buffer.from('{"action":"closed","pull_request":{"draft":false}}'))).deliveryId;
  });
  after(() => rt.stop());

  it('list shows every automation, silent ones with the reason', async () => {
    const { code, out } = await run('list');
    assert.equal(code, 0);
    const lines = out.split('\n');
    assert.match(lines[0], /^FACTORY\s+NAME\s+STATE\s+ENVIRONMENT\s+WEBHOOKS\s+SCHEDULES$/);
    assert.match(out, new RegExp(`${FACTORY}\\s+off\\s+disabled\\s+agent\\s+github`));
    assert.match(out, new RegExp(`${FACTORY}\\s+orphan\\s+silent\\s+agent\\s+${OTHER_UID} \\(unknown\\)`));
    assert.match(out, new RegExp(`${FACTORY}\\s+review\\s+enabled\\s+agent\\s+github`));
    assert.match(out, new RegExp(`${FACTORY}/orphan is silent: every trigger selects a webhook that receives nothing: unknown webhook ${OTHER_UID}\\.`));
  });

  it('list --json and --factory', async () => {
    const { code, out } = await run('list', '--factory', FACTORY, '--json');
    assert.equal(code, 0);
    const list = JSON.parse(out) as { name: string; silent: boolean }[];
    assert.deepEqual(list.map((a) => [a.name, a.silent]), [['off', false], ['orphan', true], ['review', false]]);
    const none = await run('list', '--factory', 'nothing-here');
    assert.equal(none.out, 'Factory nothing-here has no automations.\n');
  });

  it('test: Would trigger, exit 0', async () => {
    const { code, out } = await run('test', 'review', '--delivery', opened);
    assert.equal(code, 0);
    assert.equal(
      out,
      `Would trigger\n  webhook check: passed: trigger 1 selects webhook github (${GITHUB_UID}), which received this delivery\n  payload check: passed: the payload filter matches\n`,
    );
  });

  it('test: Would not trigger with the key path and the reason, exit 1', async () => {
    const { code, out } = await run('test', 'review', '--delivery', closed, '--factory', FACTORY);
    assert.equal(code, 1);
    assert.equal(
      out,
      [
        'Would not trigger',
        `  webhook check: passed: trigger 1 selects webhook github (${GITHUB_UID}), which received this delivery`,
        '  payload check: failed',
        '    key path: action',
        '    reason:   "closed" is not one of "opened", "reopened"',
        '',
      ].join('\n'),
    );
  });

  it('test --json, a failing webhook check, and a disabled automation note', async () => {
    const json = await run('test', 'orphan', '--delivery', opened, '--json');
    assert.equal(json.code, 1);
    const answer = JSON.parse(json.out);
    assert.equal(answer.would_trigger, false);
    assert.equal(answer.webhook_check.passed, false);
    const off = await run('test', 'off', '--delivery', opened);
    assert.equal(off.code, 0);
    assert.match(off.out, /^Would trigger\n[\s\S]*  note: Live, nothing would start: the automation is disabled/);
  });

  it('errors are one sentence on stderr: unknown automation, unknown delivery, bad --webhook', async () => {
    const unknown = await run('test', 'nope', '--delivery', opened);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no automation is named 'nope'/);
    const missing = await run('test', 'review', '--delivery', 'no-such-delivery');
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no-such-delivery/);
    const usage = await run('test', 'review', '--delivery', opened, '--webhook', 'github');
    assert.equal(usage.code, 2);
    const noDelivery = await run('test', 'review');
    assert.equal(noDelivery.code, 2);
  });
});
