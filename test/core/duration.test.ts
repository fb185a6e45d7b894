import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentTimeoutProblem, formatDuration, MAX_AGENT_TIMEOUT_MS, parseDuration } from '../../core/duration.ts';

test('durations parse to milliseconds', () => {
  assert.equal(parseDuration('30m'), 1_800_000);
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('1h0m5s'), 3_605_000);
  assert.equal(parseDuration('250ms'), 250);
});

test('invalid durations are refused, quoting the input', () => {
  for (const bad of ['', '30', 'm', '1.5h', '-5m', '5 m', '0s', '1d']) {
    assert.throws(() => parseDuration(bad), (err: Error) => err instanceof RangeError && err.message.includes(`"${bad}"`), bad);
  }
});

test('durations format for messages', () => {
  assert.equal(formatDuration(1_000), '1s');
  assert.equal(formatDuration(90_000), '1m30s');
  assert.equal(formatDuration(1_800_000), '30m');
  assert.equal(formatDuration(5_400_000), '1h30m');
  assert.equal(formatDuration(250), '250ms');
});

test('agentTimeoutProblem: a duration from a second up to a week', () => {
  assert.equal(agentTimeoutProblem('1s'), undefined);
  assert.equal(agentTimeoutProblem('168h'), undefined);
  assert.match(agentTimeoutProblem('168h1s')!, /longer than a week/);
  assert.match(agentTimeoutProblem('600h')!, /longer than a week/);
  assert.match(agentTimeoutProblem('0s')!, /greater than zero/);
  assert.match(agentTimeoutProblem('soon')!, /invalid duration/);
  // Every allowed timeout is one a Node timer waits for (longer delays fire at once).
  assert.ok(MAX_AGENT_TIMEOUT_MS < 2 ** 31 - 1);
});
