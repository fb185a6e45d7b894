import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { matchFilter } from '../../../core/filter.ts';
import { matchingAutomations, parsePayload } from '../../../runtime/automations/match.ts';
import { FILTER_CASES } from '../../core/filter-table.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { GITHUB_UID, applyFactory, createSecret, deliverGithub, deliveryRuns, type AutomationSpec } from './helpers.ts';

/**
 * docs/filters.md at runtime: the evaluator's table (test/core/filter-table.ts, the same rows the
 * core test runs) driven through the live path: every row's filter is a real automation applied
 * from definitions, every row's payload is a real signed delivery through the ingress (so the body
 * is parsed exactly as the ingress parses it), and a row's automation starts a run iff the row says
 * it matches. One evaluator, one table.
 */

const name = (i: number) => `case-${String(i).padStart(3, '0')}`;

describe('the filter table through the runtime', () => {
  let rt: TestRuntime;
  const started = new Map<number, Set<string>>();

  before(async () => {
    rt = await startTestRuntime({ flags: { limits: { deliveriesPerMinute: 10_000, deliveryLogKeep: 1_000 } } });
    // Runs stay QUEUED: this test is about which runs start, not how they execute.
    (rt.services.executor as { pause(): void } | undefined)?.pause();
    await createSecret(rt);
    const automations: Record<string, AutomationSpec> = {};
    FILTER_CASES.forEach((c, i) => (automations[name(i)] = { payload: c.filter }));
    await applyFactory(rt, automations);
    for (const [i, c] of FILTER_CASES.entries()) {
      const { res, deliveryId } = await deliverGithub(rt, Buffer.from(c.payload), { deliveryId: `table-${i}` });
      assert.equal(res.status, 202, c.name);
      started.set(i, new Set((await deliveryRuns(rt, deliveryId)).map((r) => r.automation)));
    }
  });
  after(() => rt.stop());

  for (const [i, c] of FILTER_CASES.entries()) {
    it(`${c.name}: ${c.matches ? 'starts a run' : 'starts nothing'}`, () => {
      assert.equal(started.get(i)!.has(name(i)), c.matches);
    });
  }

  it('every delivery starts exactly the automations whose filter matches its body, no more', () => {
    for (const [i, d] of FILTER_CASES.entries()) {
      const body = JSON.parse(d.payload);
      const expected = FILTER_CASES.flatMap((a, j) => (matchFilter(a.filter, body) ? [name(j)] : []));
      assert.deepEqual([...started.get(i)!].sort(), expected, d.name);
    }
  });
});

describe('matchingAutomations (the pure selection the hook uses)', () => {
  const automation = (name: string, triggers: { uid: string; payload?: Record<string, unknown> }[], enabled = true) => ({
    factory: 'shop',
    name,
    enabled,
    triggers: triggers.map((t) => ({
      provider: 'webhook' as const,
      event: 'received' as const,
      filter: { webhook_ids: [t.uid] as [string], ...(t.payload ? { payload: t.payload as never } : {}) },
    })),
  });
  const hook = { uid: GITHUB_UID, factory: 'shop' };

  it('runs every table row through the same parse the ingress uses', () => {
    for (const c of FILTER_CASES) {
      const got = matchingAutomations([automation('a', [{ uid: GITHUB_UID, payload: c.filter }])], hook, () => parsePayload(Buffer.from(c.payload)));
      assert.equal(got.length, c.matches ? 1 : 0, c.name);
    }
  });

  it('any trigger of the automation may match; each automation counts once', () => {
    const a = automation('a', [{ uid: GITHUB_UID, payload: { action: 'closed' } }, { uid: GITHUB_UID, payload: { action: 'opened' } }]);
    assert.deepEqual(matchingAutomations([a], hook, () => ({ action: 'opened' })).map((x) => x.name), ['a']);
  });

  it('skips disabled automations, other webhooks and other factories; no filter matches everything', () => {
    const list = [
      automation('plain', [{ uid: GITHUB_UID }]),
      automation('off', [{ uid: GITHUB_UID }], false),
      automation('elsewhere', [{ uid: 'wh_otherotherotherotherothera' }]),
      { ...automation('foreign', [{ uid: GITHUB_UID }]), factory: 'other' },
    ];
    assert.deepEqual(matchingAutomations(list, hook, () => 'any JSON value').map((x) => x.name), ['plain']);
  });

  it('parses the body at most once, and not at all when no automation listens', () => {
    let parses = 0;
    const parse = () => (parses++, { action: 'opened' });
    matchingAutomations([automation('a', [{ uid: GITHUB_UID }]), automation('b', [{ uid: GITHUB_UID, payload: { action: 'opened' } }])], hook, parse);
    assert.equal(parses, 1);
    matchingAutomations([automation('c', [{ uid: 'wh_otherotherotherotherothera' }])], hook, parse);
    assert.equal(parses, 1);
  });

  it('parsePayload refuses what the ingress refuses (a BOM, invalid UTF-8)', () => {
    assert.throws(() => parsePayload(Buffer.from('\uFEFF{}', 'utf8')));
    assert.throws(() => parsePayload(Buffer.from([0x22, 0xff, 0x22])));
    assert.deepEqual(parsePayload(Buffer.from('{"__proto__": {"x": 1}}')), JSON.parse('{"__proto__": {"x": 1}}'));
  });
});
