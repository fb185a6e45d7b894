import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileAutomations, matchCompiled, matchingAutomations, type MatchableAutomation } from '../../../runtime/automations/match.ts';
import type { WebhookTrigger } from '../../../core/snapshot.ts';
import { body, filter, roundTrip } from '../../helpers/filter-arbitraries.ts';

/**
 * The compiled automations of a webhook (runtime/automations/match.ts `compileAutomations`, what
 * the ingress hook evaluates) start exactly the automations `matchingAutomations` starts, in the
 * same order, whatever the filters and the payload.
 */

const UID = 'wh_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const OTHER = 'wh_bbbbbbbbbbbbbbbbbbbbbbbbbb';
const trigger = (uid: string, payload?: unknown): WebhookTrigger =>
  ({ provider: 'webhook', event: 'received', filter: { webhook_ids: [uid], ...(payload === undefined ? {} : { payload }) } }) as WebhookTrigger;
const automation = (name: string, triggers: WebhookTrigger[], enabled = true): MatchableAutomation => ({ factory: 'f', name, enabled, triggers });
const names = (list: MatchableAutomation[]) => list.map((a) => a.name);
const compiled = (automations: MatchableAutomation[], payload: unknown) => names(matchCompiled(compileAutomations(automations).get(UID), () => payload));
const live = (automations: MatchableAutomation[], payload: unknown) => names(matchingAutomations(automations, { uid: UID, factory: 'f' }, () => payload));

describe('compiled automations', () => {
  it('look up equality conditions, top-level and nested, and still evaluate every other condition', () => {
    const automations = [
      automation('opened', [trigger(UID, { action: 'opened' })]),
      automation('closed', [trigger(UID, { action: ['closed', 'merged'] })]),
      automation('repo', [trigger(UID, { repository: { full_name: 'octo/app' }, action: { not_in: ['deleted'] } })]),
      automation('in', [trigger(UID, { sender: { login: { in: ['alice', 'bob'] } } })]),
      automation('exists-only', [trigger(UID, { pull_request: { exists: true } })]),
      automation('everything', [trigger(UID)]),
      automation('off', [trigger(UID, { action: 'opened' })], false),
      automation('elsewhere', [trigger(OTHER, { action: 'opened' })]),
      automation('either', [trigger(OTHER), trigger(UID, { action: 'labeled' }), trigger(UID, { label: { name: 'bug' } })]),
    ];
    const cases: [unknown, string[]][] = [
      [{ action: 'opened', repository: { full_name: 'octo/app' } }, ['opened', 'repo', 'everything']],
      [{ action: 'deleted', repository: { full_name: 'octo/app' } }, ['everything']],
      [{ action: 'merged', sender: { login: 'bob' }, pull_request: {} }, ['closed', 'in', 'exists-only', 'everything']],
      [{ action: ['opened', 'labeled'] }, ['opened', 'everything', 'either']],
      [{ label: [{ name: 'wontfix' }, { name: 'bug' }] }, ['everything', 'either']],
      [{ repository: [{ full_name: 'octo/app' }] }, ['repo', 'everything']],
      [['action', 'opened'], ['everything']],
      [null, ['everything']],
    ];
    for (const [payload, expected] of cases) {
      assert.deepEqual(compiled(automations, payload), expected, JSON.stringify(payload));
      assert.deepEqual(live(automations, payload), expected, JSON.stringify(payload));
    }
  });

  it('parse the body only when some filter needs it', () => {
    let parsed = 0;
    const body = () => {
      parsed += 1;
      return { action: 'opened' };
    };
    const plain = compileAutomations([automation('all', [trigger(UID)])]).get(UID);
    assert.deepEqual(names(matchCompiled(plain, body)), ['all']);
    assert.equal(parsed, 0);
    assert.deepEqual(matchCompiled(compileAutomations([automation('x', [trigger(OTHER)])]).get(UID), body), []);
    assert.equal(parsed, 0);
    const filtered = compileAutomations([automation('one', [trigger(UID, { action: 'opened' })])]).get(UID);
    assert.deepEqual(names(matchCompiled(filtered, body)), ['one']);
    assert.equal(parsed, 1);
  });

  it('agree with matchingAutomations on random automations and payloads (property)', () => {
    const triggerArb = fc.record({ other: fc.boolean(), payload: fc.option(filter, { nil: undefined }) });
    const automationsArb = fc.array(fc.record({ enabled: fc.boolean(), triggers: fc.array(triggerArb, { minLength: 1, maxLength: 3 }) }), { maxLength: 6 });
    fc.assert(
      fc.property(automationsArb, body, (specs, p) => {
        const automations = specs.map((s, i) =>
          automation(`a${i}`, s.triggers.map((t) => trigger(t.other ? OTHER : UID, t.payload === undefined ? undefined : roundTrip(t.payload))), s.enabled),
        );
        const payload = roundTrip(p);
        assert.deepEqual(compiled(automations, payload), live(automations, payload));
      }),
      { numRuns: 5000 },
    );
  });
});
