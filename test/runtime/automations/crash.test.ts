import { describe, it, type TestContext } from 'node:test';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startChildRuntime, type ChildRuntime } from '../ingress/helpers.ts';
import { engines, postgresUrl } from '../../helpers/postgres.ts';
import { GITHUB_UID, applyFactory, createSecret, deliverGithub, webhookRuns, type Api, type AutomationSpec } from './helpers.ts';

/**
 * Pipeline step 9 (docs/ingress.md): the delivery and its runs commit in one transaction. A runtime
 * in a child process is killed with SIGKILL while matching deliveries are being accepted, then
 * restarted on the same data dir: every delivery that got a 202 is in the log, and every Accepted
 * delivery has exactly the runs of its matching automations, no more, no fewer. On both engines:
 * SQLite in the data dir, and PostgreSQL.
 */

const AUTOMATIONS: Record<string, AutomationSpec & { payload?: Record<string, unknown> }> = {
  opened: { payload: { action: 'opened' } },
  even: { payload: { parity: 'even' } },
  everything: {},
  never: { payload: { action: 'deleted' } },
};

/** Which automations each body should start, written out by hand (not through the runtime's evaluator). */
const EXPECTED: Record<string, (body: { action?: unknown; parity?: unknown }) => boolean> = {
  opened: (b) => b.action === 'opened',
  even: (b) => b.parity === 'even',
  everything: () => true,
  never: (b) => b.action === 'deleted',
};

function expectedFor(body: { action?: unknown; parity?: unknown }): string[] {
  return Object.keys(AUTOMATIONS)
    .filter((name) => EXPECTED[name](body))
    .sort();
}

// The engines side by side: each crash is a runtime of its own on a data dir (and database) of its own.
describe('a crash under load', { concurrency: true }, () => {
  for (const engine of engines()) {
    it(`SIGKILL while accepting matching deliveries loses no 202 and leaves exactly the matching runs [${engine}]`, async (t) => {
      // PostgreSQL: the runtime's database is a schema of its own on the test server (docs/deploy.md).
      let env: Record<string, string> = {};
      if (engine === 'postgres') {
        const url = await postgresUrl(t);
        if (url === undefined) return;
        env = { FACTORY_DATABASE_URL: url, FACTORY_MASTER_KEY: randomBytes(32).toString('base64') };
      }
      await crashAndRestart(t, env);
    });
  }
});

/** One SIGKILL under load and a restart, on the database `env` names (the data dir's SQLite file by default). */
async function crashAndRestart(t: TestContext, env: Record<string, string>): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'factory-crash-'));
  // The runtime in its own process on `dataDir`, as a restart would find it.
  const serve = () => startChildRuntime({ FACTORY_RATE_DELIVERIES_PER_MINUTE: '100000', ...env }, { dataDir, args: ['--max-concurrent-runs', '1'] });
  let current: ChildRuntime | undefined;
  t.after(async () => {
    if (current && current.proc.exitCode === null && current.proc.signalCode === null) {
      current.proc.kill('SIGTERM');
      await current.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(`${dataDir}-workspaces`, { recursive: true, force: true });
  });
  current = await serve();
  await createSecret(current);
  await applyFactory(current, AUTOMATIONS);

  // Senders keep posting until the runtime is gone; it is killed, mid-stream, once enough 202s
  // are in, so some requests are in flight (some of them inside the Accepted transaction).
  const bodies = new Map<string, Buffer>();
  const got202: string[] = [];
  const KILL_AFTER = 60;
  let n = 0;
  let killed = false;
  // Requests that got no answer: refused (sent after the process was gone) or cut off in flight.
  let refused = 0;
  let cutOff = 0;
  const sender = async () => {
    for (;;) {
      const i = n++;
      const deliveryId = `crash-${i}`;
      const body = Buffer.from(JSON.stringify({ action: i % 3 === 0 ? 'opened' : 'closed', parity: i % 2 === 0 ? 'even' : 'odd', n: i }));
      bodies.set(deliveryId, body);
      // Only the network call is guarded: an answer that did arrive must be a 202, killed or not.
      let res: Response;
      try {
        ({ res } = await deliverGithub(current!, body, { deliveryId }));
      } catch (err) {
        if (!killed) throw err;
        if (errorCode(err) === 'ECONNREFUSED') refused++;
        else cutOff++;
        return;
      }
      assert.equal(res.status, 202, deliveryId);
      got202.push(deliveryId);
      if (got202.length >= KILL_AFTER && !killed) {
        killed = true;
        current!.proc.kill('SIGKILL');
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  await current.exited;
  assert.equal(current.proc.signalCode, 'SIGKILL');
  // The kill came while requests were in flight: some connection was cut, not only refused.
  assert.equal(refused + cutOff, 16);
  assert.ok(cutOff >= 1, `no request was in flight at the kill (${refused} refused)`);

  current = await serve();
  const log: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const res = await current.fetch(`/api/v1/webhooks/${GITHUB_UID}/deliveries?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    const page = (await res.json()) as { deliveries: Record<string, any>[]; page_info: { next_cursor: string | null } };
    log.push(...page.deliveries);
    cursor = page.page_info.next_cursor;
  } while (cursor);

  // Every 202 is in the log, Accepted.
  const accepted = new Map(log.filter((d) => d.outcome === 'accepted').map((d) => [d.delivery_id as string, d]));
  for (const id of got202) assert.ok(accepted.has(id), `${id} got a 202 but is not in the log`);
  assert.equal(accepted.size, log.length, 'every entry is Accepted (no rejections, no duplicates were sent)');

  // Each Accepted delivery (including any that committed without its 202 reaching the sender)
  // has exactly its matching runs.
  let expectedTotal = 0;
  for (const [id, entry] of accepted) {
    const expected = expectedFor(JSON.parse(bodies.get(id)!.toString('utf8')));
    expectedTotal += expected.length;
    assert.deepEqual(entry.runs.map((r: { automation: string }) => r.automation).sort(), expected, id);
  }
  // And no run exists that no Accepted delivery accounts for.
  const runs = await webhookRuns(current);
  assert.equal(runs.length, expectedTotal);
  for (const r of runs) assert.ok(accepted.has(r.delivery_id), `run ${r.run_id} of ${r.delivery_id}`);

  current.proc.kill('SIGTERM');
  await current.exited;
}

/** The system error code under a failed fetch (undici puts it on the cause, sometimes one level deeper). */
function errorCode(err: unknown): string | undefined {
  for (let e: any = err; e; e = e.cause) if (typeof e.code === 'string' && e.code !== 'UND_ERR_SOCKET') return e.code;
  return (err as any)?.cause?.code;
}
