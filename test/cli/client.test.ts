import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CliError, FactoryError } from '../../core/errors.ts';
import { API_BODY_BYTES, RUN_CREATE_BODY_BYTES, createClient, dataDirCandidates, resolveClientFlags, takeLastAnswer } from '../../cli/client.ts';
import { DEFAULT_LIMITS } from '../../runtime/config.ts';
import { runCli } from '../../cli/main.ts';
import { bufferIO, runBuffered } from './helpers.ts';
import type { CliIO } from '../../cli/io.ts';
import { startTestRuntime } from '../runtime/helpers.ts';
import { listenLocally } from '../helpers/listen.ts';

const io = (env: Record<string, string>, cwd: string): CliIO => ({
  stdout: () => {},
  stderr: () => {},
  env,
  cwd,
  stdin: Readable.from([]),
  stdinIsTTY: false,
  stdoutIsTTY: false,
});

/** A pid that no process has any more: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function dataDir(at: string, files: { key?: string; runtime?: { url: string; pid: number } }): string {
  const dir = join(at, '.factory');
  mkdirSync(dir, { recursive: true });
  if (files.key) writeFileSync(join(dir, 'admin.key'), files.key + '\n');
  if (files.runtime) writeFileSync(join(dir, 'runtime.json'), JSON.stringify({ ...files.runtime, started_at: '2026-01-01T00:00:00.000Z' }));
  return dir;
}

const plain = (r: { server: string; apiKey: string }) => ({ server: r.server, apiKey: r.apiKey });

test('server and key: flags, then env, then <data-dir>/admin.key; each says where it came from; none is a CliError saying how', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-client-'));
  try {
    const found = dataDir(dir, { key: 'fk_fromfile' });
    mkdirSync(join(dir, 'other'));
    writeFileSync(join(dir, 'other', 'admin.key'), 'fk_other\n');

    const fromFile = resolveClientFlags({ server: 'http://127.0.0.1:8086' }, io({}, dir));
    assert.deepEqual(plain(fromFile), { server: 'http://127.0.0.1:8086', apiKey: 'fk_fromfile' });
    assert.deepEqual({ server: fromFile.origin.server, key: fromFile.origin.key }, { server: '--server', key: join(found, 'admin.key') });
    assert.deepEqual(resolveClientFlags({ dataDir: 'other', server: 'http://h:1' }, io({}, dir)).apiKey, 'fk_other');
    assert.deepEqual(resolveClientFlags({}, io({ FACTORY_DATA_DIR: join(dir, 'other'), FACTORY_SERVER: 'http://h:1' }, '/')).apiKey, 'fk_other');
    const env = resolveClientFlags({}, io({ FACTORY_SERVER: 'http://h:1/', FACTORY_API_KEY: 'fk_env' }, dir));
    assert.deepEqual(plain(env), { server: 'http://h:1', apiKey: 'fk_env' });
    assert.deepEqual({ server: env.origin.server, key: env.origin.key }, { server: 'FACTORY_SERVER', key: 'FACTORY_API_KEY' });
    const flags = resolveClientFlags({ server: 'https://x', apiKey: 'fk_flag' }, io({ FACTORY_SERVER: 'http://h:1', FACTORY_API_KEY: 'fk_env' }, dir));
    assert.deepEqual(plain(flags), { server: 'https://x', apiKey: 'fk_flag' });
    assert.deepEqual({ server: flags.origin.server, key: flags.origin.key }, { server: '--server', key: '--api-key' });
    assert.throws(
      () => resolveClientFlags({}, io({}, '/nonexistent-dir')),
      (e: unknown) => e instanceof CliError && e.message === 'no API key: set FACTORY_API_KEY or pass --api-key, or run next to a runtime\'s data dir (looked for admin.key in ./.factory).',
    );
    assert.throws(() => resolveClientFlags({ server: 'ftp://x', apiKey: 'k' }, io({}, dir)), (e: unknown) => e instanceof CliError && e.exitCode === 2 && /^--server must be/.test(e.message));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the runtime is found by its runtime.json: in ./.factory, in the factory repo given, or up to the git root; a stale one is ignored', () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-find-'));
  try {
    // No git root above a temp dir: only ./.factory (and the repo given) are searched.
    const here = join(root, 'here');
    mkdirSync(here);
    dataDir(here, { key: 'fk_here', runtime: { url: 'http://127.0.0.1:8081/', pid: process.pid } });
    const r = resolveClientFlags({}, io({}, here));
    assert.deepEqual(plain(r), { server: 'http://127.0.0.1:8081', apiKey: 'fk_here' });
    assert.equal(r.origin.server, join(here, '.factory', 'runtime.json'));

    // A runtime that died without a clean stop: its runtime.json is ignored, its key used only with a server given.
    const stale = join(root, 'stale');
    dataDir(stale, { key: 'fk_stale', runtime: { url: 'http://127.0.0.1:8082', pid: deadPid() } });
    assert.throws(() => resolveClientFlags({}, io({}, stale)), /^CliError: the runtime of \.\/\.factory, whose admin key was found, is not running/);
    assert.deepEqual(plain(resolveClientFlags({ server: 'http://127.0.0.1:8082' }, io({}, stale))), { server: 'http://127.0.0.1:8082', apiKey: 'fk_stale' });

    // `factory dev repo` keeps its data in repo/.factory; `factory plan repo` from elsewhere finds it.
    const elsewhere = join(root, 'elsewhere');
    mkdirSync(elsewhere);
    const repo = join(root, 'repo');
    dataDir(repo, { key: 'fk_repo', runtime: { url: 'http://127.0.0.1:8083', pid: process.pid } });
    assert.deepEqual(plain(resolveClientFlags({}, io({}, elsewhere), { dir: '../repo' })), { server: 'http://127.0.0.1:8083', apiKey: 'fk_repo' });
    assert.throws(() => resolveClientFlags({}, io({}, elsewhere)), /no API key/);
    // A running runtime wins over a data dir that only holds a key (an old ./.factory, say).
    dataDir(elsewhere, { key: 'fk_old' });
    assert.deepEqual(plain(resolveClientFlags({}, io({}, elsewhere), { dir: '../repo' })), { server: 'http://127.0.0.1:8083', apiKey: 'fk_repo' });

    // Inside a git repo, the parents up to its root are searched, and no further.
    const git = join(root, 'project');
    mkdirSync(join(git, '.git'), { recursive: true });
    mkdirSync(join(git, 'src', 'deep'), { recursive: true });
    dataDir(root, { key: 'fk_above_the_git_root' });
    assert.throws(() => resolveClientFlags({}, io({}, join(git, 'src', 'deep'))), /no API key/);
    dataDir(git, { key: 'fk_git', runtime: { url: 'http://127.0.0.1:8084', pid: process.pid } });
    const deep = resolveClientFlags({}, io({}, join(git, 'src', 'deep')));
    assert.deepEqual(plain(deep), { server: 'http://127.0.0.1:8084', apiKey: 'fk_git' });
    assert.equal(deep.origin.key, join(git, '.factory', 'admin.key'));
    assert.deepEqual(dataDirCandidates(join(git, 'src', 'deep')), [join(git, 'src', 'deep', '.factory'), join(git, 'src', '.factory'), join(git, '.factory')]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a server given by flag or environment gets the key of its own data dir, never the admin key of another running runtime', () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-find-'));
  try {
    dataDir(root, { key: 'fk_local', runtime: { url: 'http://127.0.0.1:8085', pid: process.pid } });
    assert.deepEqual(plain(resolveClientFlags({}, io({ FACTORY_SERVER: 'http://127.0.0.1:8085' }, root))), { server: 'http://127.0.0.1:8085', apiKey: 'fk_local' });
    assert.throws(
      () => resolveClientFlags({ server: 'https://factory.example.com' }, io({}, root)),
      (e: unknown) =>
        e instanceof CliError &&
        e.message === `no API key for https://factory.example.com (from --server): ${join(root, '.factory', 'admin.key')} belongs to the runtime at http://127.0.0.1:8085; set FACTORY_API_KEY or pass --api-key.`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the admin key of a data dir whose runtime is not running is sent nowhere: one sentence, exit 1, no default URL', async () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-stopped-'));
  try {
    // A stopped runtime's data dir, or a copy of one: admin.key, and no runtime.json or a stale one.
    const dir = dataDir(root, { key: 'fk_stopped' });
    const message = 'the runtime of ./.factory, whose admin key was found, is not running (no runtime.json there names a running process); start it with `factory dev` or `factory serve`, or pass --server.';
    assert.throws(() => resolveClientFlags({}, io({}, root)), (e: unknown) => e instanceof CliError && e.exitCode === 1 && e.message === message);
    writeFileSync(join(dir, 'runtime.json'), JSON.stringify({ url: 'http://127.0.0.1:8087', pid: deadPid(), started_at: '2026-01-01T00:00:00.000Z' }));
    assert.throws(() => resolveClientFlags({}, io({}, root)), (e: unknown) => e instanceof CliError && e.message === message);
    assert.throws(() => resolveClientFlags({ dataDir: dir }, io({}, '/')), (e: unknown) => e instanceof CliError && /^the runtime of \S*factory-stopped-\w+\/\.factory, whose admin key was found, is not running/.test(e.message));
    const cli = await runBuffered(['key', 'list'], {}, { cwd: root });
    assert.deepEqual(cli, { code: 1, out: '', err: `error: ${message}\n` });
    // A key given by the user still goes to the default server; only the data dir's own key is held back.
    assert.equal(resolveClientFlags({}, io({ FACTORY_API_KEY: 'fk_given' }, root)).server, 'http://127.0.0.1:8080');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('auth and scope errors say which key went where; a key left in FACTORY_API_KEY is named, with the admin key it hides', async () => {
  const rt = await startTestRuntime();
  try {
    // The runtime's own data dir, as `factory serve` leaves it: admin.key and runtime.json.
    const home = join(rt.dataDir, 'home');
    mkdirSync(home);
    symlinkSync(rt.dataDir, join(home, '.factory'));
    const runtimeFile = join(home, '.factory', 'runtime.json');
    assert.equal(JSON.parse(readFileSync(runtimeFile, 'utf8')).url, rt.url);

    const ok = bufferIO({}, { cwd: home });
    assert.equal(await runCli(['key', 'list'], ok), 0, ok.err);

    const created = bufferIO({}, { cwd: home });
    assert.equal(await runCli(['key', 'create', '--name', 'ci', '--kind', 'agent', '--scope', 'runs'], created), 0, created.err);
    const runsKey = created.out.trim();

    const scoped = bufferIO({ FACTORY_API_KEY: runsKey }, { cwd: home });
    assert.equal(await runCli(['webhook', 'list'], scoped), 1);
    assert.equal(
      scoped.err,
      `error: This API key does not have the "manage" scope (the key from FACTORY_API_KEY; the runtime ${rt.url}, from ${runtimeFile}); unset FACTORY_API_KEY to use the admin key in ${join(home, '.factory', 'admin.key')}.\n`,
    );

    const wrong = bufferIO({}, { cwd: home });
    assert.equal(await runCli(['key', 'list', '--api-key', 'fk_wrong', '--server', rt.url], wrong), 1);
    assert.equal(
      wrong.err,
      `error: The API key is not valid or has been revoked (the key from --api-key; the runtime ${rt.url}, from --server); drop --api-key to use the admin key in ${join(home, '.factory', 'admin.key')}.\n`,
    );

    const nowhere = bufferIO({ FACTORY_API_KEY: 'fk_wrong' }, { cwd: '/' });
    assert.equal(await runCli(['key', 'list', '--server', rt.url], nowhere), 1);
    assert.equal(nowhere.err, `error: The API key is not valid or has been revoked (the key from FACTORY_API_KEY; the runtime ${rt.url}, from --server).\n`);
  } finally {
    await rt.stop();
  }
});

test('an unreachable runtime: the message says where its URL came from', async () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-find-'));
  try {
    const given = bufferIO({ FACTORY_API_KEY: 'k' }, { cwd: root });
    assert.equal(await runCli(['run', 'list', '--server', 'http://127.0.0.1:9'], given), 1);
    assert.equal(given.err, 'error: cannot reach the runtime at http://127.0.0.1:9 (from --server): is it still running?\n');
    dataDir(root, { key: 'k', runtime: { url: 'http://127.0.0.1:9', pid: process.pid } });
    const recorded = bufferIO({}, { cwd: root });
    assert.equal(await runCli(['run', 'list'], recorded), 1);
    assert.equal(recorded.err, `error: cannot reach the runtime at http://127.0.0.1:9 (from ${join(root, '.factory', 'runtime.json')}): is it still running?\n`);
    const client = createClient({ server: 'http://127.0.0.1:9', apiKey: 'k', origin: { server: 'the default', key: 'FACTORY_API_KEY', searched: './.factory' } });
    await assert.rejects(
      client.request('GET', '/api/v1/agent/runs'),
      (e: unknown) => e instanceof CliError && e.message === 'cannot reach the runtime at http://127.0.0.1:9 (the default: no running runtime found in ./.factory): start `factory dev` or `factory serve`, or pass --server.',
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('request: JSON on success, FactoryError from problem+json, CliError when unreachable', async () => {
  const rt = await startTestRuntime();
  try {
    const client = createClient({ server: rt.url + '/', apiKey: rt.adminKey });
    const created = await client.send<{ name: string }>('POST', '/api/v1/secrets', { name: 's1', value: 'v' });
    assert.equal(created.status, 201);
    assert.equal(created.body.name, 's1');
    assert.equal(created.headers.get('location'), '/api/v1/secrets/s1');
    assert.equal(await client.request('DELETE', '/api/v1/secrets/s1'), undefined);
    await assert.rejects(client.request('POST', '/api/v1/secrets', { name: '!' , value: 'v' }), (e: unknown) => {
      assert.ok(e instanceof FactoryError);
      assert.equal(e.code, 'invalid_request');
      assert.equal(e.errors?.[0].pointer, '/name');
      return true;
    });
    await assert.rejects(createClient({ server: rt.url, apiKey: 'fk_wrong' }).request('GET', '/api/v1/keys'), (e: unknown) => e instanceof FactoryError && e.code === 'authentication_required');
  } finally {
    await rt.stop();
  }
  await assert.rejects(
    createClient({ server: rt.url, apiKey: 'k' }).request('GET', '/healthz'),
    (e: unknown) => e instanceof CliError && e.message === `cannot reach the runtime at ${rt.url}: is \`factory serve\` running?`,
  );
});

test('what is not a runtime or not a key is said as such, never as an unreachable runtime, and no password is printed', async () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-notrt-'));
  // A real server that answers 200 to everything, as a web page or as a JSON value that is no object.
  let answer = { type: 'text/html', body: '<html>hello</html>', status: 200 };
  const server = createServer((_req, res) => res.writeHead(answer.status, { 'Content-Type': answer.type }).end(answer.body));
  const url = await listenLocally(server);
  try {
    const page = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url }, { cwd: root });
    assert.equal(await runCli(['webhook', 'list'], page), 1);
    assert.equal(page.err, `error: the server at ${url} did not answer as a factory runtime (GET /api/v1/webhooks gave 200 with a body of type text/html); check --server or FACTORY_SERVER.\n`);
    // Another program's refusal (a web server's 404 page) is not called the runtime's.
    answer = { type: 'text/html', body: '<html>Not Found</html>', status: 404 };
    const notFound = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url }, { cwd: root });
    assert.equal(await runCli(['key', 'list'], notFound), 1);
    assert.equal(notFound.err, `error: the server at ${url} answered 404 Not Found with a body of type text/html, not as a factory runtime would; check --server or FACTORY_SERVER.\n`);
    answer = { type: 'application/json', body: '[1,2]', status: 200 };
    const list = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url }, { cwd: root });
    assert.equal(await runCli(['run', 'list'], list), 1);
    assert.match(list.err, /^error: the server at .* did not answer as a factory runtime \(GET \/api\/v1\/agent\/runs gave 200 with a body of type application\/json\)/);
    // A JSON object of the wrong shape (another server, or a runtime of another version).
    answer = { type: 'application/json', body: '{"x":1}', status: 200 };
    for (const argv of [['webhook', 'list'], ['run', 'list'], ['key', 'list']]) {
      const shaped = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url }, { cwd: root });
      assert.equal(await runCli(argv, shaped), 1, argv.join(' '));
      assert.match(
        shaped.err,
        /^error: the server at \S+ answered GET \/api\/v1\/\S+ with JSON this CLI cannot read \(.+\); check --server or FACTORY_SERVER, and that the runtime runs the same version as this CLI\.\n$/,
      );
    }
    // Only an answer of this command counts: an answer accepted before a command is forgotten when
    // the command starts, so a TypeError after none is printed as it is.
    await createClient({ server: url, apiKey: 'k' }).request('GET', '/readyz');
    const afterNone = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: 'http://127.0.0.1:9' }, { cwd: root });
    assert.equal(await runCli(['webhook', 'list'], afterNone), 1);
    assert.match(afterNone.err, /^error: cannot reach the runtime/);
    assert.equal(takeLastAnswer(), undefined, 'the earlier answer was forgotten when the command started');

    const withPassword = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: `http://admin:hunter2@127.0.0.1:9` }, { cwd: root });
    assert.equal(await runCli(['webhook', 'list'], withPassword), 2);
    assert.equal(withPassword.err, 'error: FACTORY_SERVER must not carry a user name or password; give the API key with FACTORY_API_KEY or --api-key.\n');
    assert.ok(!withPassword.err.includes('hunter2'));

    const oddKey = bufferIO({ FACTORY_API_KEY: 'ключ', FACTORY_SERVER: url }, { cwd: root });
    assert.equal(await runCli(['webhook', 'list'], oddKey), 1);
    assert.equal(oddKey.err, 'error: the API key (from FACTORY_API_KEY) has characters an HTTP header cannot carry; a factory API key is printable ASCII without spaces.\n');
  } finally {
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a JSON answer of another shape is named in one sentence before anything is printed, with --json or not', async () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-shape-'));
  // A real server that answers 200 {"foo":1} to every request.
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"foo":1}'));
  });
  const url = await listenLocally(server);
  const repo = join(process.cwd(), 'examples', 'factory');
  const said = (method: string, route: string, problem: string) =>
    `error: the server at ${url} answered ${method} ${route} with JSON this CLI cannot read (${problem}); check --server or FACTORY_SERVER, and that the runtime runs the same version as this CLI.\n`;
  try {
    for (const [argv, method, route, problem] of [
      [['plan', repo, '--json', '--detailed-exitcode'], 'POST', '/api/v1/factories/example/plan', '"factory" is missing'],
      [['plan', repo], 'POST', '/api/v1/factories/example/plan', '"factory" is missing'],
      [['apply', repo, '--json'], 'POST', '/api/v1/factories/example/apply', '"factory" is missing'],
      [['run', 'list', '--json'], 'GET', '/api/v1/agent/runs', '"runs" is missing'],
      [['run', 'list'], 'GET', '/api/v1/agent/runs', '"runs" is missing'],
    ] as const) {
      const cli = bufferIO({ FACTORY_API_KEY: 'fk_x', FACTORY_SERVER: url }, { cwd: root });
      assert.equal(await runCli([...argv], cli), 1, argv.join(' '));
      assert.equal(cli.out, '', `${argv.join(' ')}: nothing on stdout`);
      assert.equal(cli.err, said(method, route, problem), argv.join(' '));
    }
  } finally {
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('an empty admin.key is said as such, not sent as an empty key', () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-emptykey-'));
  try {
    const dir = dataDir(root, { runtime: { url: 'http://127.0.0.1:9', pid: process.pid } });
    writeFileSync(join(dir, 'admin.key'), '\n');
    assert.throws(
      () => resolveClientFlags({}, io({}, root)),
      (e: unknown) => e instanceof CliError && e.message === `no API key: ${join(dir, 'admin.key')} is empty; set FACTORY_API_KEY or pass --api-key, or restore the key the runtime wrote there.`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a request body over the runtime\'s cap is refused before sending, in words, not as an unreachable runtime', async () => {
  assert.equal(API_BODY_BYTES, DEFAULT_LIMITS.apiBodyBytes, 'the CLI knows the runtime\'s cap');
  assert.equal(RUN_CREATE_BODY_BYTES, DEFAULT_LIMITS.runCreateBodyBytes, 'and the run creation route\'s own');
  const rt = await startTestRuntime();
  try {
    const client = createClient({ server: rt.url, apiKey: rt.adminKey });
    const value = 'x'.repeat(API_BODY_BYTES);
    await assert.rejects(client.request('POST', '/api/v1/secrets', { name: 'big', value }), (e: unknown) => e instanceof CliError && /^the request is \d+ bytes of JSON, more than the 1048576 bytes the runtime takes/.test(e.message));
    assert.equal(rt.store.secrets.get('big'), undefined);
    // A run creation may be larger (its images): 2 MB of JSON is sent, and judged by the runtime.
    await assert.rejects(client.request('POST', '/api/v1/agent/runs', { prompt: 'p'.repeat(2_000_000) }), (e: unknown) => e instanceof FactoryError && e.code === 'payload_too_large');
    await assert.rejects(client.request('POST', '/api/v1/agent/runs', { prompt: 'p'.repeat(RUN_CREATE_BODY_BYTES) }), (e: unknown) => e instanceof CliError && /more than the 16777216 bytes/.test(e.message));
    // Just under the cap, the request reaches the runtime, which judges it by its own rules.
    await assert.rejects(client.send('POST', '/api/v1/secrets', { name: 'big', value: 'x'.repeat(API_BODY_BYTES - 100) }), (e: unknown) => e instanceof FactoryError && e.message === 'The secret value is too long.');
  } finally {
    await rt.stop();
  }
});

test('a runtime that takes the connection and never answers ends the command after FACTORY_TIMEOUT, in one line; a bad FACTORY_TIMEOUT is a usage error', async () => {
  const root = mkdtempSync(join(tmpdir(), 'factory-timeout-'));
  // A real server that reads the request and then answers nothing, or only the headers.
  let mode: 'silent' | 'headers' = 'silent';
  const held: import('node:http').ServerResponse[] = [];
  const server = createServer((_req, res) => {
    held.push(res);
    if (mode === 'headers') res.writeHead(200, { 'Content-Type': 'application/json' }).write('{"data":');
  });
  const url = await listenLocally(server);
  try {
    const silent = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url, FACTORY_TIMEOUT: '0.3' }, { cwd: root });
    assert.equal(await runCli(['webhook', 'list'], silent), 1);
    assert.equal(silent.err, `error: the runtime at ${url} did not answer GET /api/v1/webhooks within 0.3 s; FACTORY_TIMEOUT sets this limit in seconds.\n`);
    mode = 'headers';
    const half = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url, FACTORY_TIMEOUT: '0.3' }, { cwd: root });
    assert.equal(await runCli(['run', 'list', '--state', 'FAILED'], half), 1);
    assert.equal(half.err, `error: the runtime at ${url} did not answer GET /api/v1/agent/runs within 0.3 s; FACTORY_TIMEOUT sets this limit in seconds.\n`);
    for (const bad of ['0', '-1', 'soon', '1e3', '9999999']) {
      const usage = bufferIO({ FACTORY_API_KEY: 'k', FACTORY_SERVER: url, FACTORY_TIMEOUT: bad }, { cwd: root });
      assert.equal(await runCli(['webhook', 'list'], usage), 2, bad);
      assert.equal(usage.err, `error: FACTORY_TIMEOUT must be a number of seconds above 0 (at most 2147483), got "${bad}".\n`);
    }
    assert.equal(resolveClientFlags({ server: url, apiKey: 'k' }, io({}, root)).timeoutMs, 60_000);
    assert.equal(resolveClientFlags({ server: url, apiKey: 'k' }, io({ FACTORY_TIMEOUT: '2.5' }, root)).timeoutMs, 2500);
  } finally {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
});
