import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Buckets } from '../../../runtime/ingress/metrics.ts';

describe('Buckets', () => {
  it('puts a value in the first bucket whose bound is at least the value, above every bound in the last', () => {
    const b = new Buckets([1, 2, 4]);
    for (const v of [0, 1, 1.5, 2, 4, 4.01, 100]) b.observe(v);
    assert.deepEqual([...b.counts], [2, 2, 1, 2]);
    assert.equal(b.count, 7);
    assert.equal(b.sum, 0 + 1 + 1.5 + 2 + 4 + 4.01 + 100);
  });
});
