import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runCli } from '../../cli/main.ts';
import { startTestRuntime } from '../runtime/helpers.ts';
import { PR_OPENED, applyFactory, createSecret, deliverGithub } from '../runtime/automations/helpers.ts';
import { watchIgnores } from '../../cli/commands/watch.ts';
import { bufferIO } from './helpers.ts';

/** Small points a new user meets: each with the exact words the CLI prints. */

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

test('--version and -V print the package version and exit 0', async () => {
  for (const flag of ['--version', '-V']) {
    const io = bufferIO();
    assert.equal(await runCli([flag], io), 0, flag);
    assert.equal(io.out, `${VERSION}\n`);
    assert.equal(io.err, '');
  }
});

test('an empty secret value: create suggests --pending, update (which has no --pending) does not', async () => {
  const rt = await startTestRuntime();
  try {
    const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
    const create = bufferIO(env, { stdin: Readable.from(['\n']) });
    assert.equal(await runCli(['secret', 'create', 'empty'], create), 1);
    assert.equal(create.err, 'error: the value is empty; pipe it on stdin or use --from-file, or create the secret with --pending.\n');

    assert.equal(await runCli(['secret', 'create', 'later', '--pending'], bufferIO(env)), 0);
    const update = bufferIO(env, { stdin: Readable.from(['']) });
    assert.equal(await runCli(['secret', 'update', 'later'], update), 1);
    assert.equal(update.err, 'error: the value is empty; pipe it on stdin or use --from-file.\n');
  } finally {
    await rt.stop();
  }
});

test('filter test on the file and automation test on the runtime name the same failing key, whatever order the file lists them in', async () => {
  const rt = await startTestRuntime();
  const dir = mkdtempSync(join(tmpdir(), 'factory-order-'));
  try {
    (rt.services.executor as { pause(): void } | undefined)?.pause();
    await createSecret(rt);
    // Both keys miss: `zeta` is absent, `action` is "opened". The file lists zeta first.
    await applyFactory(rt, { picky: { payload: { zeta: 'x', action: 'closed' } } });
    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.status, 202);

    const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
    const live = bufferIO(env);
    assert.equal(await runCli(['automation', 'test', 'picky', '--delivery', deliveryId], live), 1, live.err);
    assert.match(live.out, /^Would not trigger\n.*\n {2}payload check: failed\n {4}key path: action\n {4}reason: {3}"opened" is not "closed"\n$/);

    writeFileSync(join(dir, 'filter.yaml'), 'zeta: x\naction: closed\n');
    writeFileSync(join(dir, 'payload.json'), PR_OPENED);
    const offline = bufferIO({}, { cwd: dir });
    assert.equal(await runCli(['filter', 'test', 'filter.yaml', 'payload.json'], offline), 1);
    assert.equal(offline.out, 'does not match: action: "opened" is not "closed"\n');
  } finally {
    await rt.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('watch and dev leave the runtime data and work dirs unwatched, whatever they are called', () => {
  const root = '/repo';
  const ignored = (p: string, extra: string[] = []) => watchIgnores(root, extra, p);
  for (const p of ['/repo/.factory/factory.db-wal', '/repo/.factory-workspaces/run_x/app/a.txt', '/repo/.git/index', '/repo/node_modules/x/y.js', '/repo/sub/.factory/admin.key']) {
    assert.equal(ignored(p), true, p);
  }
  for (const p of ['/repo/webhooks/ci.yaml', '/repo/automations/factory-notes.md', '/repo/factory.yaml']) assert.equal(ignored(p), false, p);
  // `factory dev . --data-dir data`: the data dir and its work dir, named by dev.
  assert.equal(ignored('/repo/data/factory.db', ['/repo/data', '/repo/data-workspaces']), true);
  assert.equal(ignored('/repo/data-workspaces/run_x/out.txt', ['/repo/data', '/repo/data-workspaces']), true);
  assert.equal(ignored('/repo/webhooks/database.yaml', ['/repo/webhooks/data']), false);
  // Only what the loader reads is watched: the repo itself, factory.yaml and the definitions dirs.
  for (const p of ['/repo', '/repo/automations', '/repo/agents/a/agent.md']) assert.equal(ignored(p), false, p);
  for (const p of ['/repo/README.md', '/repo/share/man/x.gz', '/repo/src/index.ts', '/elsewhere/webhooks/x.yaml']) assert.equal(ignored(p), true, p);
});

test('run list --quiet prints only run ids; with --json it is a usage error', async () => {
  const rt = await startTestRuntime();
  try {
    (rt.services.executor as { pause(): void } | undefined)?.pause();
    const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
    const empty = bufferIO(env);
    assert.equal(await runCli(['run', 'list', '--quiet'], empty), 0, empty.err);
    assert.equal(empty.out, '');
    const both = bufferIO(env);
    assert.equal(await runCli(['run', 'list', '-q', '--json'], both), 2);
    assert.equal(both.err, 'error: --json and --quiet print different things; choose one.\n');
  } finally {
    await rt.stop();
  }
});
