import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canTransition, isFinal, isRunState, RUN_STATES, type RunState } from '../../core/run-state.ts';

const ALLOWED: [RunState, RunState][] = [
  ['QUEUED', 'INPROGRESS'],
  ['QUEUED', 'CANCELLED'],
  ['QUEUED', 'ERROR'],
  ['INPROGRESS', 'SUCCEEDED'],
  ['INPROGRESS', 'FAILED'],
  ['INPROGRESS', 'ERROR'],
  ['INPROGRESS', 'CANCELLED'],
];

test('exactly the transitions of docs/api.md#states are allowed', () => {
  for (const from of RUN_STATES) {
    for (const to of RUN_STATES) {
      const expected = ALLOWED.some(([f, t]) => f === from && t === to);
      assert.equal(canTransition(from, to), expected, `${from} → ${to}`);
    }
  }
});

test('finished runs never change again', () => {
  assert.deepEqual(RUN_STATES.filter(isFinal), ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']);
  for (const s of RUN_STATES.filter(isFinal)) for (const to of RUN_STATES) assert.equal(canTransition(s, to), false);
});

test('isRunState accepts the states only', () => {
  assert.equal(isRunState('QUEUED'), true);
  assert.equal(isRunState('queued'), false);
  assert.equal(isRunState(1), false);
});
