import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appListener, createApp } from '../../../runtime/app.ts';
import { systemClock } from '../../../runtime/clock.ts';
import { parseConfig } from '../../../runtime/config.ts';
import { createLogger } from '../../../runtime/log.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { listenLocally } from '../../helpers/listen.ts';

test('/readyz answers 503 while SQLite claims are still being read at open, then 200', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-health-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const path = join(dataDir, 'factory.db');
  const masterKey = randomBytes(32);
  const first = openStore({ path, clock: systemClock, masterKey });
  first.deliveries.writeBatch(
    [{ kind: 'accept', facts: { webhookUid: 'wh_a', deliveryId: 'd-1', size: 2, receivedAt: new Date() }, payload: Buffer.from('{}') }],
    { identityDays: 30, rejectedKeep: 100 },
  );
  first.close();

  // Opened again, as the runtime opens it; the runtime reads the claims from timers, this test not.
  const store = openStore({ path, clock: systemClock, masterKey });
  t.after(() => store.close());
  const config = parseConfig({ port: 0, dataDir, logLevel: 'silent' }, {});
  const server = createServer(appListener(createApp({ config, store, clock: systemClock, log: createLogger({ level: 'silent' }) })));
  const url = await listenLocally(server);
  t.after(() => server.close());

  const loading = await fetch(`${url}/readyz`);
  assert.equal(loading.status, 503);
  assert.equal(((await loading.json()) as { code: string }).code, 'service_unavailable');
  // The cause is the claims still unread (the store's state, not the sentence that says it).
  assert.deepEqual(store.deliveries.loading(), { loaded: 0 });
  // Any lookup reads the rest first.
  assert.equal(store.deliveries.get('wh_a', 'd-1')?.outcome, 'accepted');
  const ready = await fetch(`${url}/readyz`);
  assert.equal(ready.status, 200);
});
