import { describe, test as nodeTest, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { INHERITED_ENV, parseConfig } from '../../../runtime/config.ts';
import { SANDBOX_PATH } from '../../../runtime/executor/sandbox.ts';
import type { JobSpec } from '../../../runtime/executor/job.ts';
import { AGENTS, isolation, isGone, makeRepo, processesOfRun, processesWith, run as runIn, sandboxSkip, scratch, spec } from './helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * Every behaviour of a run, under both executors: the sandbox (the default on Linux) and direct
 * (as another user when these tests run as root, as in CI).
 */
const SKIP = sandboxSkip();
const ROOT = process.getuid?.() === 0;

/**
 * The tests, declared below: most run side by side (each in a scratch directory of its own, its
 * processes found by names of its own); one that changes this process's environment runs alone.
 */
const together: Declared[] = [];
const alone: Declared[] = [];
type Declared = [name: string, options: { skip: string | false }, fn: (t: TestContext) => Promise<void>];

for (const executor of ['sandbox', 'direct'] as const) {
  const test = (name: string, fn: (t: TestContext) => Promise<void>, where: Declared[] = together) =>
    void where.push([`${executor}: ${name}`, { skip: executor === 'sandbox' ? SKIP : false }, fn]);
  const run = (s: JobSpec, opts: Parameters<typeof runIn>[1] = {}) => runIn(s, { isolation: isolation(path.dirname(s.workspaceDir), executor), ...opts });
  /** Where this executor's commands see the workspace. */
  const wsOf = (s: JobSpec) => (executor === 'sandbox' ? '/workspace' : s.workspaceDir);

  test('a run clones, writes inputs, runs setup and the agent, and reports the changed file', async (t) => {
    const dir = scratch(t);
    const repo = makeRepo(dir);
    const payload = Buffer.from('{"action":"opened","number":7}');
    const s = spec(dir, {
      repos: [{ url: repo, path: 'app' }],
      setup: ['echo preparing', 'test -f prompt.md && test -f event-payload.json'],
      attachments: [{ name: 'event-payload.json', bytes: payload }],
    });
    const { result, events, output } = await run(s);
    assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
    assert.equal(result.agentStarted, true);

    const commands = events.filter((e) => e.type === 'command');
    assert.deepEqual(
      commands.map((c) => [c.data.phase, c.data.exit_code]),
      [['repo', 0], ['setup', 0], ['setup', 0], ['agent', 0]],
    );
    assert.equal(commands[1].data.text, 'echo preparing');
    assert.equal(commands[1].data.output, 'preparing\n');
    assert.equal(typeof commands[1].data.duration_ms, 'number');

    assert.match(output, /event payload keys: action, number/);
    assert.match(output, /event action: opened/);
    assert.match(output, /appended a line to app\/AGENT_NOTES\.md/);

    const changes = events.filter((e) => e.type === 'file_change');
    assert.equal(changes.length, 1);
    assert.equal(changes[0].data.repo, 'app');
    assert.equal(changes[0].data.path, 'AGENT_NOTES.md');
    assert.equal(changes[0].data.kind, 'added');
    assert.match(String(changes[0].data.diff), /\+- run_test: Fix the bug\./);

    assert.deepEqual(readFileSync(path.join(s.workspaceDir, 'event-payload.json')), payload);
    assert.equal(readFileSync(path.join(s.workspaceDir, 'prompt.md'), 'utf8'), s.prompt);
    assert.equal(events.some((e) => e.type === 'state'), false, 'state events belong to the pool');
  });

  test('file:// URLs with a ref, default directory names and modified/deleted files', async (t) => {
    const dir = scratch(t);
    const repo = makeRepo(dir);
    const s = spec(dir, {
      repos: [{ url: pathToFileURL(repo).href, ref: 'feature' }],
      agent: { command: ['/bin/sh', '-c', 'cd origin-app && test -f FEATURE.md && echo two >> src/a.txt && rm README.md'] },
    });
    const { result, events } = await run(s);
    assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
    const changes = events.filter((e) => e.type === 'file_change').map((e) => [e.data.repo, e.data.path, e.data.kind]);
    assert.deepEqual(changes.sort(), [
      ['origin-app', 'README.md', 'deleted'],
      ['origin-app', 'src/a.txt', 'modified'],
    ]);
  });

  test('a ref that names no commit (a file, an option) ends FAILED instead of running on the default branch', async (t) => {
    const dir = scratch(t);
    const repo = makeRepo(dir);
    const file = await run(spec(dir, { repos: [{ url: repo, ref: 'README.md' }] }));
    assert.deepEqual([file.result.state, file.result.errorCode], ['FAILED', 'repo_failed'], JSON.stringify(file.result));
    assert.match(file.result.statusMessage!, /^checking out ref "README\.md" of .*origin-app failed with exit code 128$/);
    const option = await run(spec(dir, { workspaceDir: path.join(dir, 'ws-option'), repos: [{ url: repo, ref: '--orphan=x' }] }));
    assert.deepEqual([option.result.state, option.result.errorCode], ['FAILED', 'repo_failed']);
    assert.equal(option.result.statusMessage, `repo ${repo}: ref "--orphan=x" starts with "-", which git would read as an option; name a branch, tag or commit`);
  });

  test('a local directory that is not a git repository is copied', async (t) => {
    const dir = scratch(t);
    const plain = path.join(dir, 'fixtures');
    mkdirSync(plain);
    writeFileSync(path.join(plain, 'data.txt'), 'x');
    const s = spec(dir, { repos: [{ url: plain }], agent: { command: ['/bin/sh', '-c', 'cat fixtures/data.txt'] } });
    const { result, output } = await run(s);
    assert.equal(result.state, 'SUCCEEDED');
    assert.equal(output, 'x');
  });

  test('a local directory that holds the workspace itself is refused, naming it, instead of copied into itself', async (t) => {
    // E.g. the example factory copied somewhere, whose `url: ../..` now names a directory that holds
    // the runtime's data directory. Readable by the run's user: one it cannot read is named as such first.
    const dir = scratch(t);
    chmodSync(dir, 0o755);
    const { result, events } = await run(spec(dir, { repos: [{ url: dir, path: 'app' }] }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'repo_failed');
    assert.equal(
      result.statusMessage,
      `repo ${dir} is the directory ${dir}, which holds this run's workspace, so it cannot be copied into it; name a git repository or a directory outside the runtime's data directory`,
    );
    assert.equal(events.some((e) => e.data.phase === 'agent'), false);
  });

  test('a local repo inside the data dir or the work dir is refused: runs never read them', async (t) => {
    const dir = scratch(t);
    const inData = path.join(dir, 'data', 'repo');
    mkdirSync(inData, { recursive: true });
    const inWork = path.join(dir, 'data-workspaces', 'run_other', 'app');
    mkdirSync(inWork, { recursive: true });
    for (const url of [inData, pathToFileURL(inWork).href, path.join(dir, 'data')]) {
      const { result, events } = await run(spec(dir, { repos: [{ url }] }));
      assert.equal(result.state, 'FAILED', url);
      assert.equal(result.errorCode, 'repo_failed');
      assert.equal(result.statusMessage, `repo ${url} lies inside the runtime's data directory or work directory, which runs may not read; name a repository outside them`);
      assert.equal(events.length, 0, 'nothing ran');
    }
  });

  test('a local path is read only under --local-repos: elsewhere (a home directory, /) the run fails before anything runs', async (t) => {
    const dir = scratch(t);
    const allowed = path.join(dir, 'repos');
    const home = path.join(dir, 'home', '.ssh');
    mkdirSync(path.join(allowed, 'fixtures'), { recursive: true });
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(allowed, 'fixtures', 'a.txt'), 'ok');
    writeFileSync(path.join(home, 'id_ed25519'), 'PRIVATE KEY');
    const iso = isolation(dir, executor, { localRepos: [allowed] });
    // A symlink inside the allowed directory leads elsewhere: judged by where it leads.
    symlinkSync(home, path.join(allowed, 'link-to-home'));
    for (const url of [home, pathToFileURL(home).href, '/', path.join(allowed, 'link-to-home')]) {
      const { result, events } = await runIn(spec(dir, { workspaceDir: path.join(dir, `ws-${randomBytes(4).toString('hex')}`), repos: [{ url, path: 'loot' }], agent: { command: ['/bin/sh', '-c', 'cat loot/*'] } }), { isolation: iso });
      assert.deepEqual([result.state, result.errorCode], ['FAILED', 'repo_failed'], url);
      assert.equal(result.statusMessage, `repo ${url} is a local path, and the runtime allows local repositories only under ${allowed} (--local-repos); clone it from a URL, or ask the operator to allow its directory`);
      assert.equal(events.length, 0, 'nothing ran');
    }
    const inside = await runIn(spec(dir, { workspaceDir: path.join(dir, 'ws-ok'), repos: [{ url: path.join(allowed, 'fixtures'), path: 'fx' }], agent: { command: ['/bin/sh', '-c', 'cat fx/a.txt'] } }), { isolation: iso });
    assert.equal(inside.result.state, 'SUCCEEDED', JSON.stringify(inside.result));
    assert.equal(inside.output, 'ok');
    // With none allowed (serve's default), the message says so.
    const none = await runIn(spec(dir, { workspaceDir: path.join(dir, 'ws-none'), repos: [{ url: path.join(allowed, 'fixtures') }] }), { isolation: isolation(dir, executor, { localRepos: [] }) });
    assert.match(none.result.statusMessage!, /allows local repositories none here \(--local-repos\)/);
  });

  test('a local directory that holds the data dir: the sandbox copies it with the data dir left out; direct refuses to copy it', async (t) => {
    const dir = scratch(t);
    const src = path.join(dir, 'src');
    mkdirSync(path.join(src, 'state'), { recursive: true });
    writeFileSync(path.join(src, 'file.txt'), 'x');
    writeFileSync(path.join(src, 'state', 'admin.key'), 'fk_secret');
    const s = spec(dir, { repos: [{ url: src }], agent: { command: ['/bin/sh', '-c', 'cat src/file.txt; ls -A src/state'] } });
    const { result, output } = await runIn(s, { isolation: isolation(dir, executor, { dataDir: path.join(src, 'state') }) });
    if (executor === 'sandbox') {
      assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
      assert.equal(output, 'x');
      assert.equal(existsSync(path.join(s.workspaceDir, 'src', 'state', 'admin.key')), false);
    } else {
      assert.equal(result.state, 'FAILED');
      assert.equal(result.errorCode, 'repo_failed');
      assert.equal(result.statusMessage, `repo ${src} holds the runtime's data directory or work directory, which a copy would carry into the workspace; name a directory that does not`);
    }
  });

  test('a data dir named through a symlink is found by its real path: covered in the sandbox, refused direct', async (t) => {
    const dir = scratch(t);
    const src = path.join(dir, 'src');
    mkdirSync(path.join(src, 'state'), { recursive: true });
    writeFileSync(path.join(src, 'file.txt'), 'x');
    writeFileSync(path.join(src, 'state', 'admin.key'), 'fk_secret');
    symlinkSync(path.join(src, 'state'), path.join(dir, 'data-link'));
    const iso = isolation(dir, executor, { dataDir: path.join(dir, 'data-link') });
    const s = spec(dir, { repos: [{ url: src }], agent: { command: ['/bin/sh', '-c', 'cat src/file.txt; ls -A src/state'] } });
    const { result, output } = await runIn(s, { isolation: iso });
    if (executor === 'sandbox') {
      assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
      assert.equal(output, 'x');
    } else {
      assert.equal(result.state, 'FAILED');
      assert.equal(result.errorCode, 'repo_failed');
      assert.match(result.statusMessage!, /holds the runtime's data directory or work directory/);
    }
    // A repo named by the data dir's real path is inside it.
    const inside = await runIn(spec(dir, { workspaceDir: path.join(dir, 'ws2'), repos: [{ url: path.join(src, 'state') }] }), { isolation: iso });
    assert.deepEqual([inside.result.state, inside.result.errorCode], ['FAILED', 'repo_failed']);
    assert.match(inside.result.statusMessage!, /lies inside the runtime's data directory or work directory/);
  });

  test("a local directory the run's commands cannot read ends FAILED saying so, not taken for one that is not a repository", async (t) => {
    const dir = scratch(t);
    const locked = path.join(dir, 'locked');
    mkdirSync(locked);
    writeFileSync(path.join(locked, 'data.txt'), 'x');
    // Readable by no one but root, and root's runs are another user (--run-uid).
    chmodSync(locked, 0o000);
    let result;
    try {
      ({ result } = await run(spec(dir, { repos: [{ url: locked }] })));
    } finally {
      chmodSync(locked, 0o700); // so that the scratch directory can be removed
    }
    assert.deepEqual([result.state, result.errorCode], ['FAILED', 'repo_failed'], JSON.stringify(result));
    const who = ROOT ? "the run's commands, which run as uid 65534 because the runtime is root (--run-uid)" : "the run's commands";
    const where = executor === 'sandbox' ? locked : `${locked} and every directory above it`;
    assert.equal(result.statusMessage, `repo ${locked} cannot be read by ${who}; make ${where} readable to them (e.g. chmod o+rx), or name a repository they can read`);
  });

  test('a local directory that cannot be copied ends FAILED naming it', async (t) => {
    const dir = scratch(t);
    const plain = path.join(dir, 'fixtures');
    mkdirSync(plain);
    writeFileSync(path.join(plain, 'data.txt'), 'x');
    // A workspace target that already exists as a file makes the copy fail.
    mkdirSync(path.join(dir, 'ws'), { recursive: true });
    writeFileSync(path.join(dir, 'ws', 'fixtures'), 'in the way');
    const { result } = await run(spec(dir, { repos: [{ url: plain }] }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'repo_failed');
    assert.match(result.statusMessage!, new RegExp(`^copying repo ${plain} \\(${plain}\\) into the workspace failed: `));
  });

  test('a clone that fails ends FAILED naming the repo', async (t) => {
    const dir = scratch(t);
    const { result, events } = await run(spec(dir, { repos: [{ url: path.join(dir, 'missing.git') }] }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'repo_failed');
    assert.match(result.statusMessage!, /cloning .*missing\.git failed with exit code \d+/);
    assert.equal(events.some((e) => e.data.phase === 'agent'), false);
  });

  test('a repo path outside the workspace is refused', async (t) => {
    const dir = scratch(t);
    const repo = makeRepo(dir);
    const { result } = await run(spec(dir, { repos: [{ url: repo, path: '../escape' }] }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'repo_failed');
    assert.match(result.statusMessage!, /inside the workspace/);
  });

  test('a failing setup command ends FAILED naming it, and the agent never starts', async (t) => {
    const dir = scratch(t);
    const { result, events } = await run(spec(dir, { setup: ['true', 'echo broken >&2; exit 7', 'echo never'] }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'setup_failed');
    assert.equal(result.statusMessage, 'setup command "echo broken >&2; exit 7" failed with exit code 7');
    assert.equal(result.agentStarted, false);
    const commands = events.filter((e) => e.type === 'command');
    assert.deepEqual(commands.map((c) => c.data.exit_code), [0, 7]);
    assert.equal(commands[1].data.output, 'broken\n');
  });

  test('a failing agent ends FAILED with its exit code', async (t) => {
    const dir = scratch(t);
    const { result, output } = await run(spec(dir, { agent: { command: ['node', path.join(AGENTS, 'failing-agent.mjs')] } }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'agent_failed');
    assert.equal(result.statusMessage, 'agent exited with exit code 3');
    assert.equal(result.agentStarted, true);
    assert.match(output, /giving up on purpose/);
  });

  test('a missing agent program ends FAILED naming the program', async (t) => {
    const dir = scratch(t);
    const { result } = await run(spec(dir, { agent: { command: ['factory-no-such-agent-xyz', '--flag'] } }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'agent_not_found');
    assert.equal(result.statusMessage, 'agent program "factory-no-such-agent-xyz" was not found');
    assert.equal(result.agentStarted, false);
  });

  test('an agent past its timeout is killed and the run ends FAILED', async (t) => {
    const dir = scratch(t);
    const { result } = await run(spec(dir, { agent: { command: ['/bin/sh', '-c', 'echo started; sleep 30'], timeoutMs: 1_000 } }));
    assert.equal(result.state, 'FAILED');
    assert.equal(result.errorCode, 'agent_timeout');
    assert.equal(result.statusMessage, 'agent timed out after 1s');
  });

  // The disk limit (docs/security.md#limits), measured here every 100 ms instead of every 5 s.
  const withDiskMb = (s: JobSpec, mb: string) => run(s, { isolation: isolation(path.dirname(s.workspaceDir), executor, { sandboxDiskMb: mb }), diskCheckMs: 100 });
  test('a run whose workspace grows past its disk limit is stopped, and FAILED as workspace_too_large', async (t) => {
    const dir = scratch(t);
    const marker = `disk-hog-${randomBytes(4).toString('hex')}`;
    const s = spec(dir, { agent: { command: ['/bin/sh', '-c', `head -c 3000000 /dev/urandom > big; echo ${marker}; exec sleep 60`] } });
    const { result } = await withDiskMb(s, '1');
    assert.equal(result.state, 'FAILED', JSON.stringify(result));
    assert.equal(result.errorCode, 'workspace_too_large');
    assert.match(result.statusMessage ?? '', /^the workspace took \d+ MiB of disk, more than the 1 MiB a run may take \(--sandbox-disk-mb\)$/);
    assert.equal(result.agentStarted, true);
    // Stopped, not left to sleep out its minute.
    assert.deepEqual(processesWith(marker), []);
  });

  test('a run that ends past its disk limit between two measures fails too; under it, or with no limit, it succeeds', async (t) => {
    const dir = scratch(t);
    const write = (name: string) => spec(path.join(dir, name), { agent: { command: ['/bin/sh', '-c', 'head -c 3000000 /dev/urandom > big'] } });
    for (const name of ['a', 'b', 'c']) mkdirSync(path.join(dir, name));
    // Measured only at the end: the agent is done long before the first periodic measure.
    const ended = await run(write('a'), { isolation: isolation(path.join(dir, 'a'), executor, { sandboxDiskMb: '1' }), diskCheckMs: 600_000 });
    assert.equal(ended.result.state, 'FAILED', JSON.stringify(ended.result));
    assert.equal(ended.result.errorCode, 'workspace_too_large');
    assert.equal((await withDiskMb(write('b'), '64')).result.state, 'SUCCEEDED');
    assert.equal((await withDiskMb(write('c'), '0')).result.state, 'SUCCEEDED');
  });

  test('cancel kills the whole process group, grandchildren included', async (t) => {
    const dir = scratch(t);
    // A sleep no other test starts, found by its command line (a sandbox's own pids mean nothing here).
    const sleep = `sleep ${randomInt(3000, 9000)}`;
    const ac = new AbortController();
    const s = spec(dir, { runId: `run_cancel_${executor}`, agent: { command: ['/bin/sh', '-c', `${sleep} & touch "$FACTORY_WORKSPACE/started"; wait`] } });
    const job = run(s, { signal: ac.signal });
    await eventually(() => existsSync(path.join(s.workspaceDir, 'started')) && processesWith(sleep).length > 0, 'the grandchild sleep');
    const [pid] = processesWith(sleep);
    ac.abort();
    const { result } = await job;
    assert.equal(result.state, 'CANCELLED');
    assert.equal(result.errorCode, 'cancelled');
    await eventually(() => isGone(pid), `the grandchild ${pid} to be gone`);
    await eventually(() => processesOfRun(s.runId).length === 0, 'no process of the run to be left');
  });

  test("the change report runs none of the repo's fsmonitor, external diff or textconv the agent set, and ends on cancel", async (t) => {
    const dir = scratch(t);
    const repo = makeRepo(dir);
    // Distinct sleeps, found by their command lines: each would hang the report for hours.
    const fsmonitor = `sleep ${randomInt(10_000, 19_000)}`;
    const filter = `sleep ${randomInt(20_000, 29_000)}`;
    const agent = [
      'cd app',
      `git config core.fsmonitor "${fsmonitor}"`,
      'git config diff.external /bin/false',
      'echo "README.md diff=ext" > .git/info/attributes',
      'git config diff.ext.textconv /bin/false',
      'echo changed >> README.md',
    ].join(' && ');
    const quick = spec(dir, { runId: `run_report_${executor}`, repos: [{ url: repo, path: 'app' }], agent: { command: ['/bin/sh', '-c', agent] } });
    const { result, events } = await run(quick);
    assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
    const change = events.find((e) => e.type === 'file_change' && e.data.path === 'README.md');
    assert.ok(change, JSON.stringify(events.filter((e) => e.type === 'file_change')));
    assert.match(String(change.data.diff), /^\+changed$/m);
    assert.equal(processesWith(fsmonitor).length, 0);

    // A clean filter (which git status must run on a changed file) that never ends: cancel ends it.
    const hang = `cd app && echo "README.md filter=hang" > .git/info/attributes && git config filter.hang.clean "${filter}" && echo again >> README.md`;
    const dir2 = scratch(t);
    const s = spec(dir2, { runId: `run_report_cancel_${executor}`, repos: [{ url: makeRepo(dir2), path: 'app' }], agent: { command: ['/bin/sh', '-c', hang] } });
    const ac = new AbortController();
    const job = run(s, { signal: ac.signal });
    await eventually(() => processesWith(filter).length > 0, 'the report to hang in the clean filter', { tries: 600 });
    ac.abort();
    const ended = await job;
    assert.equal(ended.result.state, 'CANCELLED');
    await eventually(() => processesWith(filter).length === 0, 'the filter to be gone');
  });

  test('cancel during setup stops it and never starts the agent', async (t) => {
    const dir = scratch(t);
    const s = spec(dir, { setup: [`touch "$FACTORY_WORKSPACE/setup-started"; sleep 300`] });
    const marker = path.join(s.workspaceDir, 'setup-started');
    const ac = new AbortController();
    const job = run(s, { signal: ac.signal });
    await eventually(() => existsSync(marker), 'setup to start');
    ac.abort();
    const { result, events } = await job;
    assert.equal(result.state, 'CANCELLED');
    assert.equal(events.some((e) => e.data.phase === 'agent'), false);
  });

  test('the agent sees a minimal environment: no master key, no API keys of the runtime', async (t) => {
    const dir = scratch(t);
    // The runtime's environment as parseConfig sees it: keys of the runtime and of providers.
    const runtimeEnv = {
      ...process.env,
      FACTORY_MASTER_KEY: randomBytes(32).toString('base64'),
      FACTORY_API_KEY: 'fk_runtime-api-key',
      FACTORY_DATA_DIR: '/srv/factory',
      ANTHROPIC_API_KEY: 'sk-ant-runtime',
      OPENAI_API_KEY: 'sk-runtime',
      LANG: 'C.UTF-8',
    };
    const { inheritedEnv } = parseConfig({}, runtimeEnv);
    const s = spec(dir, { env: { TOKEN: 'resolved-secret', MODE: 'test' }, agent: { command: ['env'] } });
    const { result, output } = await run(s, { inheritedEnv });
    assert.equal(result.state, 'SUCCEEDED');
    const env = Object.fromEntries(output.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    for (const name of ['FACTORY_MASTER_KEY', 'FACTORY_API_KEY', 'FACTORY_DATA_DIR', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY']) assert.equal(env[name], undefined, name);
    assert.equal(env.LANG, 'C.UTF-8');
    // The sandbox starts from a fixed PATH and its own HOME; direct keeps the runtime's, except
    // HOME for a run as another user (root's HOME is not theirs).
    assert.equal(env.PATH, executor === 'sandbox' ? SANDBOX_PATH : process.env.PATH);
    const ownHome = executor === 'sandbox' || ROOT;
    assert.equal(env.HOME, ownHome ? path.join(wsOf(s), '.home') : process.env.HOME);
    assert.equal(env.TOKEN, 'resolved-secret');
    assert.equal(env.MODE, 'test');
    assert.equal(env.FACTORY_RUN_ID, 'run_test');
    assert.equal(env.FACTORY_WORKSPACE, wsOf(s));
    assert.equal(env.FACTORY_PROMPT_FILE, path.join(wsOf(s), 'prompt.md'));
    // Under `npm run coverage`, node itself adds NODE_V8_COVERAGE to every child's environment,
    // whatever env the spawn is given; it names a scratch directory, nothing of the runtime.
    const underCoverage = process.env.NODE_V8_COVERAGE ? ['NODE_V8_COVERAGE'] : [];
    const allowed = new Set([...INHERITED_ENV, 'TOKEN', 'MODE', 'FACTORY_RUN_ID', 'FACTORY_WORKSPACE', 'FACTORY_PROMPT_FILE', 'PWD', 'OLDPWD', 'SHLVL', '_', ...underCoverage]);
    assert.deepEqual(Object.keys(env).filter((k) => !allowed.has(k)), []);
  });

  test('the job inherits config.inheritedEnv only, never this process.env', async (t) => {
    const dir = scratch(t);
    const before = process.env.TZ;
    process.env.TZ = 'Pacific/Chatham';
    process.env.FACTORY_MASTER_KEY = randomBytes(32).toString('base64');
    t.after(() => {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
      delete process.env.FACTORY_MASTER_KEY;
    });
    const { result, output } = await run(spec(dir, { agent: { command: ['/usr/bin/env'] } }), { inheritedEnv: { HOME: '/nonexistent-home' } });
    assert.equal(result.state, 'SUCCEEDED');
    const names = output.trim().split('\n').map((l) => l.slice(0, l.indexOf('=')));
    assert.deepEqual(names.filter((n) => ['TZ', 'FACTORY_MASTER_KEY'].includes(n)), []);
    if (executor === 'sandbox') {
      // Not even the inherited HOME: the sandbox's own PATH, HOME and locale.
      assert.ok(output.includes(`PATH=${SANDBOX_PATH}\n`) && output.includes('HOME=/workspace/.home\n') && output.includes('LANG=C.UTF-8\n'), output);
    } else {
      assert.ok(output.includes(ROOT ? 'HOME=' : 'HOME=/nonexistent-home\n'), output);
      assert.deepEqual(names.filter((n) => ['PATH', 'LANG'].includes(n)), []);
    }
  }, alone);

  test("a run's PATH and LD_PRELOAD reach its command only, never the wrappers that start it (bubblewrap on the host, setpriv as root)", async (t) => {
    // Direct as the runtime's own user starts the command itself: no wrapper to keep them from.
    if (executor === 'direct' && !ROOT) return t.skip('no wrapper runs under direct as an ordinary user');
    const dir = scratch(t);
    // A fake bwrap and setpriv first on the run's PATH: were it used to find the wrapper, the
    // run's own code would run outside the sandbox (as root under a root runtime).
    const fake = path.join(dir, 'fake-bin');
    const marker = path.join(dir, 'wrapper-hijacked');
    mkdirSync(fake);
    for (const name of ['bwrap', 'setpriv']) {
      writeFileSync(path.join(fake, name), `#!/bin/sh\necho "$0" >> '${marker}'\nexec /usr/bin/${name} "$@"\n`, { mode: 0o755 });
    }
    const env = { PATH: `${fake}:/usr/bin:/bin`, LD_PRELOAD: '/nonexistent/run-preload.so', RUN_SECRET: `s-${randomBytes(8).toString('hex')}` };
    // Each wrapper's environment, read from /proc the moment its group starts (spawn returns once
    // it has exec'd). Under direct the leader is setpriv only until the launcher execs the command
    // in the same process, so an environment is checked only while /proc shows a wrapper there;
    // bubblewrap stays the leader for the command's life.
    const wrapperEnvs: string[] = [];
    const { result, output } = await run(
      spec(dir, { env, agent: { command: ['/bin/sh', '-c', 'echo "PATH=$PATH"; echo "PRELOAD=$LD_PRELOAD"; echo "SECRET=$RUN_SECRET"; sleep 0.3'] } }),
      {
        onGroup: (event, pgid) => {
          if (event !== 'start') return;
          try {
            const environ = readFileSync(`/proc/${pgid}/environ`, 'latin1');
            const argv0 = readFileSync(`/proc/${pgid}/cmdline`, 'latin1').split('\0')[0];
            if (/(^|\/)(bwrap|setpriv)$/.test(argv0)) wrapperEnvs.push(environ);
          } catch {
            // Gone already.
          }
        },
      },
    );
    assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
    assert.ok(!existsSync(marker), `a wrapper was found on the run's PATH: ${existsSync(marker) ? readFileSync(marker, 'utf8') : ''}`);
    // The command itself has the run's variables, exactly.
    assert.match(output, new RegExp(`^PATH=${fake}:/usr/bin:/bin$`, 'm'));
    assert.match(output, /^PRELOAD=\/nonexistent\/run-preload\.so$/m);
    assert.match(output, new RegExp(`^SECRET=${env.RUN_SECRET}$`, 'm'));
    if (executor === 'sandbox') assert.ok(wrapperEnvs.length > 0, 'bubblewrap was seen leading the group');
    for (const environ of wrapperEnvs) {
      assert.deepEqual(environ.split('\0').filter(Boolean).sort(), [`FACTORY_RUN_ID=run_test`, `PATH=${SANDBOX_PATH}`]);
    }
  });

  test('a value with quotes, newlines and shell syntax arrives in the command byte for byte', async (t) => {
    const dir = scratch(t);
    const tricky = `it's "quoted" $(touch /tmp/never) \`x\` \\ $HOME\nsecond line\n\n`;
    // Names the launcher could have used for its own variables arrive as the run set them too.
    const env = { TRICKY: tricky, p: 'mine', e: 'also mine' };
    const { result, output } = await run(spec(dir, { env, agent: { command: ['node', '-e', 'process.stdout.write(JSON.stringify([process.env.TRICKY, process.env.p, process.env.e]))'] } }));
    assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
    assert.deepEqual(JSON.parse(output), [tricky, 'mine', 'also mine']);
  });

  test('the prompt arrives on stdin', async (t) => {
    const dir = scratch(t);
    const { output } = await run(spec(dir, { prompt: 'hello agent\n', agent: { command: ['cat'] } }));
    assert.equal(output, 'hello agent\n');
  });

  test('agent output is capped per run with one truncation marker', async (t) => {
    const dir = scratch(t);
    const { result, events } = await run(
      spec(dir, { agent: { command: ['node', '-e', 'for (let i = 0; i < 5000; i++) console.log("line " + i + " " + "x".repeat(40))'] } }),
      { caps: { agentOutputBytes: 10_000 } },
    );
    assert.equal(result.state, 'SUCCEEDED');
    const outputs = events.filter((e) => e.type === 'output');
    const markers = outputs.filter((e) => e.data.truncated === true);
    assert.equal(markers.length, 1);
    assert.equal(outputs.at(-1), markers[0]);
    const kept = outputs.filter((e) => !e.data.truncated).reduce((n, e) => n + Buffer.byteLength(String(e.data.text)), 0);
    assert.ok(kept <= 10_000 && kept > 9_000, `kept ${kept} bytes`);
  });

  test('claude-stream-json output becomes message events; other lines stay output', async (t) => {
    const dir = scratch(t);
    const { result, events } = await run(spec(dir, { agent: { command: ['node', path.join(AGENTS, 'claude-stream-agent.mjs')], format: 'claude-stream-json' } }));
    assert.equal(result.state, 'SUCCEEDED');
    const messages = events.filter((e) => e.type === 'message').map((e) => e.data.kind);
    assert.deepEqual(messages, ['system', 'text', 'tool_use', 'tool_result', 'result']);
    assert.deepEqual(events.filter((e) => e.type === 'output').map((e) => e.data.text), ['this line is not JSON\n']);
  });

  test('setup commands share one output budget per run, each still capped on its own', async (t) => {
    const dir = scratch(t);
    const print100 = `printf '%0100d' 0`;
    const { result, events } = await run(spec(dir, { setup: [print100, print100, print100] }), {
      caps: { commandOutputBytes: 100, commandOutputBytesTotal: 150 },
    });
    assert.equal(result.state, 'SUCCEEDED');
    const setup = events.filter((e) => e.type === 'command' && e.data.phase === 'setup');
    assert.deepEqual(
      setup.map((e) => [String(e.data.output).length, e.data.output_truncated ?? false]),
      [[100, false], [50, true], [0, true]],
    );
  });

  test('each command reports its process group when it starts and once it is gone', async (t) => {
    const dir = scratch(t);
    const groups: [string, number][] = [];
    const { result } = await run(spec(dir, { setup: ['true', 'true'] }), { onGroup: (event, pgid) => groups.push([event, pgid]) });
    assert.equal(result.state, 'SUCCEEDED');
    // Two setup commands and the agent, one after the other: start, end, start, end, start, end.
    assert.deepEqual(groups.map(([e]) => e), ['start', 'end', 'start', 'end', 'start', 'end']);
    for (let i = 0; i < groups.length; i += 2) assert.equal(groups[i][1], groups[i + 1][1]);
  });

  test('with the default caps, a run that prints a lot keeps its transcript under 3 MB', async (t) => {
    const dir = scratch(t);
    const loud = `head -c 100000 /dev/zero | tr '\\0' a`;
    const s = spec(dir, {
      setup: Array.from({ length: 24 }, () => loud),
      agent: { command: ['/bin/sh', '-c', `head -c 3000000 /dev/zero | tr '\\0' 'b\\n'; head -c 500000 /dev/zero | tr '\\0' c >&2`] },
    });
    const { result, events } = await run(s);
    assert.equal(result.state, 'SUCCEEDED');
    const bytes = events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
    assert.ok(bytes < 3 * 1024 * 1024, `${bytes} bytes`);
    assert.ok(events.some((e) => e.type === 'output' && e.data.truncated === true));
    assert.ok(events.some((e) => e.type === 'command' && e.data.phase === 'setup' && e.data.output === '' && e.data.output_truncated === true));
  });
}

// A few at a time: their time is mostly spent waiting on the processes they start.
describe('runs of both executors, side by side', { concurrency: 4 }, () => {
  for (const [name, options, fn] of together) nodeTest(name, options, fn);
});
// It sets process.env.TZ and FACTORY_MASTER_KEY, which no other test may see: alone, after the others.
for (const [name, options, fn] of alone) nodeTest(name, options, fn);
