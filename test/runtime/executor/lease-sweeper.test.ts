import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { runsQueued } from '../../../runtime/executor/lease-sweeper.ts';
import type { Services } from '../../../runtime/services.ts';

test('runs queued several times in one turn wake the pool and the waiting claims once, after that turn', async () => {
  const woken = { executor: 0, leases: 0 };
  const services = { executor: { wake: () => woken.executor++ }, leases: { wake: () => woken.leases++ } } as unknown as Services;
  for (let i = 0; i < 50; i++) runsQueued(services);
  assert.deepEqual(woken, { executor: 0, leases: 0 }, 'not before the turn ends (the commit and the answers come first)');
  await nextTurn();
  assert.deepEqual(woken, { executor: 1, leases: 1 });
  // A later turn wakes again; other runtimes' services are woken on their own.
  const other = { executor: { wake: () => woken.executor++ } } as unknown as Services;
  runsQueued(services);
  runsQueued(other);
  runsQueued(services);
  await nextTurn();
  assert.deepEqual(woken, { executor: 3, leases: 2 });
});
