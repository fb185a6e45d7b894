import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkWindow, checkWindowSeconds, parseInteger } from '../../../../runtime/ingress/schemes/timestamp.ts';

describe('timestamp window', () => {
  const now = new Date('2025-06-01T12:00:00.750Z');
  const seconds = Math.floor(now.getTime() / 1000);

  test('five minutes is inside, both directions; one second more is outside', () => {
    assert.equal(checkWindowSeconds(seconds - 300, now), undefined);
    assert.equal(checkWindowSeconds(seconds + 300, now), undefined);
    assert.equal(checkWindowSeconds(seconds - 301, now), 'timestamp_too_old');
    assert.equal(checkWindowSeconds(seconds + 301, now), 'timestamp_in_future');
  });

  test('milliseconds are compared exactly', () => {
    assert.equal(checkWindow(now.getTime() - 300_000, now), undefined);
    assert.equal(checkWindow(now.getTime() - 300_001, now), 'timestamp_too_old');
    assert.equal(checkWindow(now.getTime() + 300_001, now), 'timestamp_in_future');
  });

  test('an invalid clock reading closes the window', () => {
    assert.equal(checkWindowSeconds(seconds, new Date(Number.NaN)), 'timestamp_too_old');
  });

  test('parseInteger takes plain decimal digits only', () => {
    assert.equal(parseInteger('1748779200'), 1748779200);
    for (const text of ['', '-1', '1.5', '1e9', ' 1', '0x10', '99999999999999999']) assert.equal(parseInteger(text), undefined, text);
  });
});
