import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { runCli } from '../../../cli/main.ts';
import { bufferIO } from '../../cli/helpers.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { AGENTS, applyEnvironments, createRun, envYaml, waitForRun } from '../routes/runs-helpers.ts';
import { compile } from '../../../cli/compiler/compile.ts';
import { snapshotDigest } from '../../../runtime/definitions/checks.ts';
import { FACTORY, PR_OPENED, createSecret, deliverGithub, deliveryRuns as automationDeliveryRuns, factoryFiles } from '../automations/helpers.ts';
import { eventually } from '../../helpers/eventually.ts';
import { listenLocally } from '../../helpers/listen.ts';

/** A real HTTP listener: records every request; `answer` decides each status (undefined: never answers). */
class Listener {
  server!: Server;
  url = '';
  received: { path: string; headers: Record<string, string>; body: string }[] = [];
  /** `nth`: how many requests this path has had; `nthOfMessage`: how many carried this request's webhook-id. */
  answer: (path: string, nth: number, nthOfMessage: number) => number | undefined = () => 204;
  private hanging: (() => void)[] = [];

  async start() {
    this.server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const p = req.url ?? '/';
        this.received.push({ path: p, headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
        const id = req.headers['webhook-id'];
        const status = this.answer(p, this.received.filter((r) => r.path === p).length, this.received.filter((r) => r.headers['webhook-id'] === id).length);
        if (status === undefined) return void this.hanging.push(() => res.destroy());
        res.writeHead(status).end();
      });
    });
    this.url = await listenLocally(this.server);
  }
  of(p: string) {
    return this.received.filter((r) => r.path === p);
  }
  async stop() {
    for (const h of this.hanging) h();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

const newSecret = () => 'whsec_' + randomBytes(32).toString('base64');

/** The notifications of a run once `done` holds for them (the run view's `notifications`). */
async function notificationsWhen(rt: TestRuntime, runId: string, done: (n: any[]) => boolean): Promise<any[]> {
  return eventually(async () => (((await (await rt.fetch(`/api/v1/agent/runs/${runId}`)).json()) as any).notifications ?? []) as any[], `the notifications of ${runId}`, {
    until: done,
  });
}

// Side by side: each test has a runtime of its own, or its own listener path on the shared one.
describe('notifications', { concurrency: true }, () => {
  describe('run notifications', { concurrency: true }, () => {
    let rt: TestRuntime;
    const listener = new Listener();

    before(async () => {
      await listener.start();
      // One answer for every path, so that the tests below run side by side: /flaky fails each
      // message twice (per message, not per path: the INPROGRESS and SUCCEEDED notifications may
      // interleave), /down always fails, the others succeed.
      listener.answer = (p, _nth, nthOfMessage) => (p === '/flaky' ? (nthOfMessage <= 2 ? 500 : 200) : p === '/down' ? 503 : 204);
      rt = await startTestRuntime({ flags: { notifyRetryDelays: '50ms,50ms,50ms' } });
      await applyEnvironments(rt, { ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) });
    });
    after(async () => {
      await rt.stop();
      await listener.stop();
    });

    it('every state change is POSTed, signed with a generated whsec_ secret shown once, verified by the standardwebhooks package', async () => {
      const { res, body } = await createRun(rt, { prompt: 'hello', config: { environment_id: 'ok' }, webhook: { url: `${listener.url}/ok` } });
      assert.equal(res.status, 201);
      const secret = body.webhook.secret as string;
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(body.webhook.url, `${listener.url}/ok`);
      await waitForRun(rt, body.run_id);
      const list = await notificationsWhen(rt, body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      assert.deepEqual(list.map((n) => n.state), ['INPROGRESS', 'SUCCEEDED']);
      assert.deepEqual(list.map((n) => n.attempts.length), [1, 1]);
      assert.equal(list[0].attempts[0].status_code, 204);

      const wh = new Webhook(secret);
      const got = listener.of('/ok').map((r) => wh.verify(r.body, r.headers) as any);
      assert.deepEqual(got.map((p) => [p.type, p.run.run_id, p.run.state]), [
        ['run.state_changed', body.run_id, 'INPROGRESS'],
        ['run.state_changed', body.run_id, 'SUCCEEDED'],
      ]);
      assert.equal(got[1].run.session_link, `${rt.url}/sessions/${body.run_id}`);
      // A wrong secret does not verify.
      assert.throws(() => new Webhook(newSecret()).verify(listener.of('/ok')[0].body, listener.of('/ok')[0].headers));
      // The secret is never shown again: not in the run, the list, the notifications or the log.
      const view = await (await rt.fetch(`/api/v1/agent/runs/${body.run_id}`)).text();
      const page = await (await rt.fetch('/api/v1/agent/runs')).text();
      for (const text of [view, page, rt.logs.text]) assert.ok(!text.includes(secret.slice(6)), 'secret leaked');
      assert.deepEqual(JSON.parse(view).webhook, { url: `${listener.url}/ok` });

      // factory run get shows the attempts.
      const io = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey });
      assert.equal(await runCli(['run', 'get', body.run_id], io), 0, io.err);
      assert.match(io.out, /notifies +http:\/\/127\.0\.0\.1:\d+\/ok/);
      assert.match(io.out, /notifications:\n +INPROGRESS +delivered \(1 attempt: \S+ 204\)\n +SUCCEEDED +delivered/);
    });

    it('a 500 is retried with the same webhook-id until a 2xx; each attempt is recorded and signed afresh', async () => {
      const secret = newSecret();
      const { res, body } = await createRun(rt, { prompt: 'hello', config: { environment_id: 'ok' }, webhook: { url: `${listener.url}/flaky`, secret } });
      assert.equal(res.status, 201);
      assert.equal(body.webhook.secret, undefined, 'a given secret is not echoed');
      await waitForRun(rt, body.run_id);
      const list = await notificationsWhen(rt, body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      const first = list[0];
      assert.deepEqual(first.attempts.map((a: any) => a.status_code), [500, 500, 200]);
      assert.match(first.attempts[0].error, /answered 500/);
      assert.equal(first.attempts[2].error, null);
      const wh = new Webhook(secret);
      const reqs = listener.of('/flaky');
      for (const r of reqs) wh.verify(r.body, r.headers);
      // Each message was sent three times under its one webhook-id, whatever the interleaving.
      assert.equal(reqs.length, 6);
      assert.equal(reqs.filter((r) => r.headers['webhook-id'] === first.message_id).length, 3);
      assert.equal(reqs.filter((r) => r.headers['webhook-id'] === list[1].message_id).length, 3);
    });

    it('gives up after the last retry; the run is not held up by it', async () => {
      const { body } = await createRun(rt, { prompt: 'hello', config: { environment_id: 'ok' }, webhook: { url: `${listener.url}/down` } });
      const run = await waitForRun(rt, body.run_id);
      assert.equal(run.state, 'SUCCEEDED');
      const list = await notificationsWhen(rt, body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'failed'));
      for (const n of list) {
        assert.deepEqual(n.attempts.map((a: any) => a.status_code), [503, 503, 503, 503]);
        assert.equal(n.next_attempt_at, null);
      }
      assert.equal(listener.of('/down').length, 8);
    });

    it('a retry reports to the same place with the same secret', async () => {
      await applyEnvironments(rt, { failing: envYaml({ command: [process.execPath, path.join(AGENTS, 'failing-agent.mjs')] }) }, 'more');
      const secret = newSecret();
      const { body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'failing' }, webhook: { url: `${listener.url}/retry`, secret } });
      assert.equal((await waitForRun(rt, body.run_id)).state, 'FAILED');
      const retried = (await (await rt.fetch(`/api/v1/agent/runs/${body.run_id}/retry`, { method: 'POST' })).json()) as any;
      assert.deepEqual(retried.webhook, { url: `${listener.url}/retry` });
      await waitForRun(rt, retried.run_id);
      await notificationsWhen(rt, retried.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      const got = listener.of('/retry').map((r) => new Webhook(secret).verify(r.body, r.headers) as any);
      assert.deepEqual(got.filter((p) => p.run.run_id === retried.run_id).map((p) => [p.run.state, p.run.retry_of]), [
        ['INPROGRESS', body.run_id],
        ['FAILED', body.run_id],
      ]);
    });

    it('bad targets and secrets are 400s that say why', async () => {
      const cases: [unknown, RegExp, string][] = [
        [{ url: 'ftp://example.com/x' }, /webhook\.url must be an http\(s\) URL/, '/webhook/url'],
        [{ url: 'not a url' }, /absolute http\(s\) URL/, '/webhook/url'],
        [{ url: 'http://user:pw@example.com/' }, /user name or password/, '/webhook/url'],
        // Not as the URL parser spells it: it would be shown as typed and sent elsewhere.
        [{ url: 'http:/x' }, /written as the URL parser spells it, \\"http:\/\/x\/\\"/, '/webhook/url'],
        [{ url: 'http://x.example/ spaces' }, /spells it, \\"http:\/\/x\.example\/%20spaces\\"/, '/webhook/url'],
        [{ url: 'HTTP://X.EXAMPLE/' }, /spells it, \\"http:\/\/x\.example\/\\"/, '/webhook/url'],
        [{ url: 'http://example.com/', secret: 'plain' }, /whsec_/, '/webhook/secret'],
        [{ url: 'http://example.com/', extra: 1 }, /unknown key .{1,2}extra/, '/webhook/extra'],
        ['http://example.com/', /must be an object/, '/webhook'],
      ];
      for (const [webhook, detail, pointer] of cases) {
        const { res, body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' }, webhook });
        assert.equal(res.status, 400, JSON.stringify(webhook));
        assert.equal(body.code, 'invalid_request');
        assert.deepEqual(body.errors.map((e: { pointer: string }) => e.pointer), [pointer], JSON.stringify(body.errors));
        assert.match(JSON.stringify(body.errors), detail);
      }
    });
  });

  describe('run notifications: allow-list and restarts', { concurrency: true }, () => {
    it('a target that never answers fails each attempt after the timeout, said once', async (t) => {
      const listener = new Listener();
      await listener.start();
      t.after(() => listener.stop());
      listener.answer = () => undefined;
      const rt = await startTestRuntime({ flags: { notifyRetryDelays: '50ms', notifyTimeoutMs: 200 } });
      t.after(() => rt.stop());
      await applyEnvironments(rt, { ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) });
      const { body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' }, webhook: { url: `${listener.url}/hang` } });
      await waitForRun(rt, body.run_id);
      const failed = await notificationsWhen(rt, body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'failed'));
      for (const n of failed) assert.deepEqual(n.attempts.map((a: any) => a.error), ['no answer within 200 ms', 'no answer within 200 ms']);
    });

    it('--notify-allow limits the targets (400 for others)', async (t) => {
      const rt = await startTestRuntime({ flags: { notifyAllow: ['hooks.example.com', '127.0.0.1:9'] } });
      t.after(() => rt.stop());
      await applyEnvironments(rt, { ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) });
      const no = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' }, webhook: { url: 'http://127.0.0.1:8080/' } });
      assert.equal(no.res.status, 400);
      assert.equal(no.body.code, 'invalid_request');
      assert.deepEqual(no.body.errors.map((e: { pointer: string }) => e.pointer), ['/webhook/url']);
      assert.match(no.body.detail, /--notify-allow/);
      for (const url of ['https://hooks.example.com/a', 'http://127.0.0.1:9/']) {
        const yes = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' }, webhook: { url } });
        assert.equal(yes.res.status, 201, url);
      }
    });

    it('a notification cut short by a stop is sent after the restart, from the outbox', async (t) => {
      const listener = new Listener();
      await listener.start();
      t.after(() => listener.stop());
      let hang = true;
      listener.answer = () => (hang ? undefined : 200);
      const first = await startTestRuntime({ keepDataDir: true });
      t.after(() => rmSync(first.dataDir, { recursive: true, force: true }));
      await applyEnvironments(first, { ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) });
      const secret = newSecret();
      const { body } = await createRun(first, { prompt: 'x', config: { environment_id: 'ok' }, webhook: { url: `${listener.url}/slow`, secret } });
      await waitForRun(first, body.run_id);
      await eventually(() => listener.of('/slow').length === 2, 'both notifications in flight');
      await first.stop();
      hang = false;
      const second = await startTestRuntime({ dataDir: first.dataDir });
      t.after(() => second.stop());
      const list = await notificationsWhen(second, body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      assert.deepEqual(list.map((n) => n.attempts.length), [1, 1]);
      const reqs = listener.of('/slow');
      assert.equal(reqs.length, 4);
      // The same messages (webhook-id) again, each verifiable.
      assert.deepEqual(reqs.slice(2).map((r) => r.headers['webhook-id']).sort(), reqs.slice(0, 2).map((r) => r.headers['webhook-id']).sort());
      for (const r of reqs) new Webhook(secret).verify(r.body, r.headers);
    });
  });

  describe('run notifications of an automation (notify key)', () => {
    it('compiles, is checked at plan (the secret must exist and be usable), and its runs report signed with the team secret', async (t) => {
      const listener = new Listener();
      await listener.start();
      t.after(() => listener.stop());
      const rt = await startTestRuntime({ flags: { notifyRetryDelays: '50ms' } });
      t.after(() => rt.stop());
      await createSecret(rt);
      const files = factoryFiles({ review: { payload: { action: 'opened' }, notify: { url: `${listener.url}/auto`, secretName: 'review-notify' } } });
      const { snapshot, diagnostics } = compile(files);
      assert.deepEqual(diagnostics.filter((d) => d.severity === 'error'), []);
      assert.deepEqual(snapshot!.automations[0].notify, { url: `${listener.url}/auto`, secretName: 'review-notify' });
      const apply = () => rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot } });

      const missing = await apply();
      assert.equal(missing.status, 400, await missing.clone().text());
      const problem = (await missing.json()) as any;
      assert.ok(problem.errors.some((e: any) => e.code === 'secret.not_found' && e.file === 'automations/review.md' && e.pointer === '/notify/secretName'), JSON.stringify(problem.errors));

      const secret = newSecret();
      assert.equal((await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'review-notify', value: secret } })).status, 201);
      const applied = await apply();
      assert.equal(applied.status, 200, await applied.text());
      const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
      assert.equal(res.status, 202);
      const [started] = await automationDeliveryRuns(rt, deliveryId);
      await waitForRun(rt, started.run_id);
      const list = await notificationsWhen(rt, started.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      assert.deepEqual(list.map((n) => n.state), ['INPROGRESS', 'SUCCEEDED']);
      const run = (await (await rt.fetch(`/api/v1/agent/runs/${started.run_id}`)).json()) as any;
      assert.deepEqual(run.webhook, { url: `${listener.url}/auto`, secret_name: 'review-notify' });
      const got = listener.of('/auto').map((r) => new Webhook(secret).verify(r.body, r.headers) as any);
      assert.deepEqual(got.map((p) => [p.run.run_id, p.run.automation, p.run.state]), [
        [started.run_id, 'review', 'INPROGRESS'],
        [started.run_id, 'review', 'SUCCEEDED'],
      ]);
    });
  });

  describe('the notify key in the compiler', () => {
    const compileWith = (notify: unknown) => compile(factoryFiles({ review: { notify } })).diagnostics.filter((d) => d.severity === 'error');

    it('takes an http(s) URL and a secret name, and reports anything else at the key', () => {
      assert.deepEqual(compileWith({ url: 'https://hooks.example.com/a?b=c', secretName: 'review-notify' }), []);
      for (const [notify, pointer] of [
        [{ url: 'ftp://example.com/x', secretName: 's' }, '/notify/url'],
        [{ url: 'http://user:pw@example.com/x', secretName: 's' }, '/notify/url'],
        [{ url: 'https://example.com/x' }, '/notify'],
        [{ url: 'https://example.com/x', secretName: 's', secret: 'whsec_x' }, '/notify'],
      ] as const) {
        const errors = compileWith(notify);
        assert.ok(errors.length > 0 && errors.every((d) => d.file === 'automations/review.md'), JSON.stringify(notify));
        assert.ok(errors.some((d) => String(d.pointer).startsWith(pointer)), `${JSON.stringify(notify)}: ${JSON.stringify(errors)}`);
      }
      // What only a URL parser knows: reported once, at the value, with the code that says so.
      for (const url of ['https://hooks.example.com:99999/runs', 'http://[::1/x', 'http://exa%zzmple.com/']) {
        const errors = compileWith({ url, secretName: 'review-notify' });
        assert.deepEqual(errors.map((d) => [d.code, d.pointer, d.message]), [['automation.notify_url', '/notify/url', `notify.url must be an absolute http(s) URL, got ${JSON.stringify(url)}`]], url);
      }
      // Not written as the parser gives it back: the same rule as the API's, with the form to write.
      for (const [url, normal] of [
        ['HTTP://X.EXAMPLE/', 'http://x.example/'],
        ['https://hooks.example.com:443/runs', 'https://hooks.example.com/runs'],
      ]) {
        const errors = compileWith({ url, secretName: 'review-notify' });
        const message = `notify.url must be written as the URL parser spells it, ${JSON.stringify(normal)}, got ${JSON.stringify(url)}`;
        assert.deepEqual(errors.map((d) => [d.code, d.pointer, d.message]), [['automation.notify_url', '/notify/url', message]], url);
      }
    });
  });

  describe('a notify URL stored before it was checked', () => {
    it('is refused at apply; one already in the outbox fails its attempts in words, without holding the outbox or spinning', async (t) => {
      const listener = new Listener();
      await listener.start();
      t.after(() => listener.stop());
      const rt = await startTestRuntime({ flags: { notifyRetryDelays: '50ms', notifyAllow: ['127.0.0.1'] } });
      t.after(() => rt.stop());
      await createSecret(rt);
      assert.equal((await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'review-notify', value: newSecret() } })).status, 201);
      const files = factoryFiles({ review: { payload: { action: 'opened' }, notify: { url: `${listener.url}/auto`, secretName: 'review-notify' } } });
      const { snapshot } = compile(files);
      // A snapshot that did not come from this compiler: the runtime checks the URL itself.
      const forged = structuredClone(snapshot!);
      forged.automations[0].notify!.url = 'https://hooks.example.com:99999/runs';
      forged.digest = snapshotDigest(forged);
      const refused = await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot: forged } });
      assert.equal(refused.status, 400);
      const problem = (await refused.json()) as any;
      assert.ok(problem.errors.some((e: any) => e.code === 'automation.notify_url' && e.pointer === '/notify/url'), JSON.stringify(problem.errors));
      // Nor one that is not written as the URL parser spells it.
      forged.automations[0].notify!.url = listener.url.toUpperCase() + '/auto';
      forged.digest = snapshotDigest(forged);
      const unlike = (await (await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot: forged } })).json()) as any;
      assert.ok(
        unlike.errors.some((e: any) => e.code === 'automation.notify_url' && e.message === `notify.url must be written as the URL parser spells it, ${JSON.stringify(`${listener.url}/auto`)}`),
        JSON.stringify(unlike.errors),
      );

      // One that reached the outbox anyway (a database from before this check): its run's row is
      // given the bad URL, and a good run is queued after it.
      assert.equal((await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot } })).status, 200);
      rt.services.executor!.pause();
      const { deliveryId } = await deliverGithub(rt, PR_OPENED);
      const [bad] = await automationDeliveryRuns(rt, deliveryId);
      rt.store.transaction(() => rt.store.db.prepare('UPDATE runs SET notify = replace(notify, ?, ?) WHERE run_id = ?').run(`${listener.url}/auto`, 'https://hooks.example.com:99999/runs', bad.run_id));
      const good = await createRun(rt, { prompt: 'x', config: { environment_id: 'agent' }, webhook: { url: `${listener.url}/good` } });
      let reads = 0;
      const due = rt.store.runs.dueNotifications.bind(rt.store.runs);
      rt.store.runs.dueNotifications = (...args) => {
        reads++;
        return due(...args);
      };
      rt.services.executor!.resume();
      await waitForRun(rt, bad.run_id);
      await waitForRun(rt, good.body.run_id);
      const failed = await notificationsWhen(rt, bad.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'failed'));
      for (const n of failed) assert.deepEqual(n.attempts.map((a: any) => a.error), ['the URL must be an absolute http(s) URL', 'the URL must be an absolute http(s) URL']);
      await notificationsWhen(rt, good.body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      assert.ok(!rt.logs.text.includes('hooks.example.com'), 'the URL is never logged');
      // A receiver that holds an attempt open: the outbox is read on wakes, not in a loop meanwhile.
      listener.answer = () => undefined;
      const slow = await createRun(rt, { prompt: 'x', config: { environment_id: 'agent' }, webhook: { url: `${listener.url}/hold` } });
      await waitForRun(rt, slow.body.run_id);
      await eventually(() => listener.of('/hold').length === 2, 'both notifications in flight');
      const before = reads;
      await new Promise((r) => setTimeout(r, 1000));
      assert.ok(reads - before <= 3, `the outbox was read ${reads - before} times in a second while two attempts were in flight`);
    });

    it('one stored as given rather than as the URL parser spells it (before that rule) is still sent to', async (t) => {
      const listener = new Listener();
      await listener.start();
      t.after(() => listener.stop());
      const rt = await startTestRuntime({ flags: { notifyRetryDelays: '50ms' } });
      t.after(() => rt.stop());
      await applyEnvironments(rt, { ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) });
      rt.services.executor!.pause();
      const { body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' }, webhook: { url: `${listener.url}/old` } });
      const asGiven = listener.url.toUpperCase() + '/old';
      rt.store.transaction(() => rt.store.db.prepare('UPDATE runs SET notify = replace(notify, ?, ?) WHERE run_id = ?').run(`${listener.url}/old`, asGiven, body.run_id));
      rt.services.executor!.resume();
      await waitForRun(rt, body.run_id);
      await notificationsWhen(rt, body.run_id, (n) => n.length === 2 && n.every((x) => x.status === 'delivered'));
      assert.equal(listener.of('/old').length, 2);
    });
  });
});
