import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CliError } from '../../core/errors.ts';
import { DEFAULT_LIMITS, parseConfig } from '../../runtime/config.ts';

test('defaults follow docs/runtime.md#limits', () => {
  const c = parseConfig({}, {}, '/srv/app');
  assert.equal(c.port, 8080);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.baseUrl, 'http://127.0.0.1:8080');
  assert.equal(c.dataDir, '/srv/app/.factory');
  assert.equal(c.masterKey, undefined);
  assert.equal(c.trustProxy, false);
  assert.equal(c.maxConcurrentRuns, 2);
  assert.equal(c.logLevel, 'info');
  assert.deepEqual(c.limits, DEFAULT_LIMITS);
  assert.equal(c.limits.ingressBodyBytes, 262144);
  assert.equal(c.limits.apiBodyBytes, 1048576);
});

test('the result is deeply frozen', () => {
  const c = parseConfig({}, {}, '/x');
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.limits));
  assert.throws(() => {
    (c.limits as { runListMax: number }).runListMax = 1;
  }, TypeError);
});

test('environment fallbacks, and flags win over them', () => {
  const env = {
    FACTORY_PORT: '9000',
    FACTORY_HOST: '0.0.0.0',
    FACTORY_DATA_DIR: 'data',
    FACTORY_TRUST_PROXY: 'true',
    FACTORY_MAX_CONCURRENT_RUNS: '5',
    FACTORY_LOG_LEVEL: 'warn',
    FACTORY_RATE_DELIVERIES_PER_MINUTE: '100000',
    FACTORY_RATE_FAILED_AUTH_PER_MINUTE: '500',
  };
  const c = parseConfig({}, env, '/w');
  assert.equal(c.port, 9000);
  assert.equal(c.host, '0.0.0.0');
  assert.equal(c.baseUrl, 'http://0.0.0.0:9000');
  assert.equal(c.dataDir, '/w/data');
  assert.equal(c.trustProxy, true);
  assert.equal(c.maxConcurrentRuns, 5);
  assert.equal(c.logLevel, 'warn');
  assert.equal(c.limits.deliveriesPerMinute, 100000);
  assert.equal(c.limits.failedAuthPerMinute, 500);
  const f = parseConfig({ port: '7000', host: 'localhost', dataDir: '/abs', maxConcurrentRuns: 1, trustProxy: false }, env, '/w');
  assert.equal(f.port, 7000);
  assert.equal(f.host, 'localhost');
  assert.equal(f.dataDir, '/abs');
  assert.equal(f.maxConcurrentRuns, 1);
  assert.equal(f.trustProxy, false);
});

test('base URL: explicit, trailing slash removed; IPv6 hosts are bracketed', () => {
  assert.equal(parseConfig({ baseUrl: 'https://hooks.example.com/' }, {}).baseUrl, 'https://hooks.example.com');
  assert.equal(parseConfig({}, { FACTORY_BASE_URL: 'https://x.example/factory/' }).baseUrl, 'https://x.example/factory');
  assert.equal(parseConfig({ host: '::1', port: 1 }, {}).baseUrl, 'http://[::1]:1');
});

test('master key: base64 of exactly 32 bytes', () => {
  const key = randomBytes(32);
  assert.deepEqual(parseConfig({}, { FACTORY_MASTER_KEY: key.toString('base64') }).masterKey, key);
  for (const bad of [randomBytes(16).toString('base64'), 'not base64 at all!!', key.toString('hex')]) {
    assert.throws(() => parseConfig({}, { FACTORY_MASTER_KEY: bad }), (e: unknown) => e instanceof CliError && /FACTORY_MASTER_KEY/.test(e.message));
  }
});

test('invalid values name the flag or variable', () => {
  const cases: [Parameters<typeof parseConfig>[0], Record<string, string>, RegExp][] = [
    [{ port: 'eighty' }, {}, /--port/],
    [{}, { FACTORY_PORT: '70000' }, /FACTORY_PORT/],
    [{ maxConcurrentRuns: '0' }, {}, /--max-concurrent-runs/],
    [{ maxConnections: '7' }, {}, /--max-connections must be an integer from 8 to 1000000, got "7"/],
    [{}, { FACTORY_MAX_CONNECTIONS: 'lots' }, /FACTORY_MAX_CONNECTIONS/],
    [{}, { FACTORY_TRUST_PROXY: 'maybe' }, /FACTORY_TRUST_PROXY/],
    [{ baseUrl: 'ftp://x' }, {}, /--base-url/],
    [{}, { FACTORY_LOG_LEVEL: 'loud' }, /FACTORY_LOG_LEVEL/],
    [{}, { FACTORY_RATE_DELIVERIES_PER_MINUTE: '-1' }, /FACTORY_RATE_DELIVERIES_PER_MINUTE/],
  ];
  for (const [flags, env, re] of cases) {
    assert.throws(() => parseConfig(flags, env), (e: unknown) => e instanceof CliError && e.exitCode === 2 && re.test(e.message));
  }
});

test('--max-connections: unset is chosen at start (undefined here); the flag wins over the variable', () => {
  assert.equal(parseConfig({}, {}).maxConnections, undefined);
  assert.equal(parseConfig({}, { FACTORY_MAX_CONNECTIONS: '500' }).maxConnections, 500);
  assert.equal(parseConfig({ maxConnections: '64' }, { FACTORY_MAX_CONNECTIONS: '500' }).maxConnections, 64);
});

test('limit overrides for tests', () => {
  assert.equal(parseConfig({ limits: { ingressBodyBytes: 10 } }, {}).limits.ingressBodyBytes, 10);
});

test('inheritedEnv holds only the variables agents inherit, from the env given, frozen (docs/runs.md)', () => {
  const env = {
    PATH: '/usr/bin:/bin',
    HOME: '/home/f',
    TZ: 'UTC',
    FACTORY_MASTER_KEY: randomBytes(32).toString('base64'),
    FACTORY_API_KEY: 'fk_x',
    ANTHROPIC_API_KEY: 'sk-ant',
    AWS_SECRET_ACCESS_KEY: 'aws',
  };
  const c = parseConfig({}, env, '/w');
  assert.deepEqual(c.inheritedEnv, { PATH: '/usr/bin:/bin', HOME: '/home/f', TZ: 'UTC' });
  assert.ok(Object.isFrozen(c.inheritedEnv));
  assert.deepEqual(parseConfig({}, {}, '/w').inheritedEnv, {});
});

const LINUX_USER = { platform: 'linux' as const, uid: 1000 };
const LINUX_ROOT = { platform: 'linux' as const, uid: 0 };

test('executor: sandbox by default on Linux, direct elsewhere; flag and FACTORY_EXECUTOR choose it', () => {
  const linux = parseConfig({}, {}, '/srv', LINUX_USER);
  assert.deepEqual([linux.executor, linux.executorChosen], ['sandbox', false]);
  assert.equal(parseConfig({}, {}, '/srv', { platform: 'darwin', uid: 501 }).executor, 'direct');
  const chosen = parseConfig({}, { FACTORY_EXECUTOR: 'direct' }, '/srv', LINUX_USER);
  assert.deepEqual([chosen.executor, chosen.executorChosen], ['direct', true]);
  assert.equal(parseConfig({ executor: 'sandbox' }, { FACTORY_EXECUTOR: 'direct' }, '/srv', LINUX_USER).executor, 'sandbox');
  assert.throws(() => parseConfig({ executor: 'docker' }, {}, '/srv', LINUX_USER), (e: CliError) => e.exitCode === 2 && e.message === '--executor must be sandbox or direct, got "docker".');
  assert.equal(linux.sandbox.bwrap, 'bwrap');
  assert.equal(parseConfig({}, { FACTORY_BWRAP: '/opt/bwrap' }, '/srv', LINUX_USER).sandbox.bwrap, '/opt/bwrap');
  assert.deepEqual([linux.sandbox.memoryMb, linux.sandbox.maxProcesses, linux.sandbox.maxOpenFiles], [4096, 4096, 8192]);
  assert.equal(parseConfig({ sandboxMemoryMb: '512' }, { FACTORY_SANDBOX_MAX_OPEN_FILES: '1024' }, '/srv', LINUX_USER).sandbox.memoryMb, 512);
  assert.throws(() => parseConfig({ sandboxMaxProcesses: '2' }, {}, '/srv', LINUX_USER), /--sandbox-max-processes must be an integer from 16/);
});

test('work dir: next to the data dir by default; never the data dir, inside it, or around it', () => {
  assert.equal(parseConfig({}, {}, '/srv', LINUX_USER).workDir, '/srv/.factory-workspaces');
  assert.equal(parseConfig({ workDir: 'runs' }, {}, '/srv', LINUX_USER).workDir, '/srv/runs');
  assert.equal(parseConfig({}, { FACTORY_WORK_DIR: '/var/tmp/runs' }, '/srv', LINUX_USER).workDir, '/var/tmp/runs');
  for (const bad of ['.factory', '.factory/workspaces', '/srv', '/']) {
    assert.throws(() => parseConfig({ workDir: bad }, {}, '/srv', LINUX_USER), (e: CliError) => e.exitCode === 2 && /^--work-dir must lie outside the data dir \/srv\/\.factory/.test(e.message), bad);
  }
});

test('run uid: 65534 when the runtime is root, UID or UID:GID to choose; refused when it is not root', () => {
  assert.deepEqual(parseConfig({}, {}, '/srv', LINUX_ROOT).runAs, { uid: 65534, gid: 65534 });
  assert.deepEqual(parseConfig({ runUid: '1500:1600' }, {}, '/srv', LINUX_ROOT).runAs, { uid: 1500, gid: 1600 });
  assert.deepEqual(parseConfig({}, { FACTORY_RUN_UID: '1500' }, '/srv', LINUX_ROOT).runAs, { uid: 1500, gid: 1500 });
  for (const bad of ['0', '0:0', '1500:0', 'nobody', '-1']) assert.throws(() => parseConfig({ runUid: bad }, {}, '/srv', LINUX_ROOT), /--run-uid must be UID or UID:GID/, bad);
  assert.equal(parseConfig({}, {}, '/srv', LINUX_USER).runAs, undefined);
  assert.throws(() => parseConfig({ runUid: '1500' }, {}, '/srv', LINUX_USER), /--run-uid needs the runtime to run as root/);
});

test('sandbox read-only binds: absolute, repeatable or colon-separated; never the data dir, the work dir or /', () => {
  assert.deepEqual(parseConfig({ sandboxRoBind: ['/opt/agent', 'tools'] }, {}, '/srv', LINUX_USER).sandbox.roBinds, ['/opt/agent', '/srv/tools']);
  assert.deepEqual(parseConfig({}, { FACTORY_SANDBOX_RO_BIND: '/opt/a:/opt/b' }, '/srv', LINUX_USER).sandbox.roBinds, ['/opt/a', '/opt/b']);
  // A directory that holds the data dir is allowed: the sandbox covers the data dir inside it.
  assert.deepEqual(parseConfig({ sandboxRoBind: ['/srv'] }, {}, '/srv', LINUX_USER).sandbox.roBinds, ['/srv']);
  for (const bad of ['/', '.factory', '.factory/x', '.factory-workspaces/run_x']) {
    assert.throws(() => parseConfig({ sandboxRoBind: [bad] }, {}, '/srv', LINUX_USER), /--sandbox-ro-bind must name a directory outside the data dir and the work dir/, bad);
  }
});

test('--repository-base: a URL git clones from, or a directory made absolute; default https://github.com', () => {
  assert.equal(parseConfig({}, {}, '/srv', LINUX_USER).repositoryBase, 'https://github.com');
  assert.equal(parseConfig({ repositoryBase: 'https://git.example.com/mirrors/' }, {}, '/srv', LINUX_USER).repositoryBase, 'https://git.example.com/mirrors');
  assert.equal(parseConfig({ repositoryBase: 'ssh://git@github.com' }, {}, '/srv', LINUX_USER).repositoryBase, 'ssh://git@github.com');
  assert.equal(parseConfig({ repositoryBase: 'mirrors' }, {}, '/srv', LINUX_USER).repositoryBase, '/srv/mirrors');
  assert.equal(parseConfig({}, { FACTORY_REPOSITORY_BASE: '/opt/mirrors' }, '/srv', LINUX_USER).repositoryBase, '/opt/mirrors');
  // A password would be in every clone command of a transcript; the variable's value is not repeated.
  assert.throws(() => parseConfig({ repositoryBase: 'https://u:hunter2@github.com' }, {}, '/srv', LINUX_USER), /--repository-base must be a URL git can clone from/);
  assert.throws(() => parseConfig({}, { FACTORY_REPOSITORY_BASE: 'https://u:hunter2@github.com' }, '/srv', LINUX_USER), (err: Error) => !err.message.includes('hunter2') && /FACTORY_REPOSITORY_BASE/.test(err.message));
  assert.throws(() => parseConfig({ repositoryBase: 'ftp://example.com' }, {}, '/srv', LINUX_USER), /https, http, ssh, git or file/);
});

test('database: SQLite by default; a PostgreSQL URL from --database or FACTORY_DATABASE_URL needs the master key', () => {
  assert.deepEqual(parseConfig({}, {}, '/srv').database, { engine: 'sqlite' });
  const key = randomBytes(32).toString('base64');
  const url = 'postgres://factory:s3cret@db.internal:5432/factory';
  const fromEnv = parseConfig({}, { FACTORY_DATABASE_URL: url, FACTORY_MASTER_KEY: key }, '/srv').database;
  assert.deepEqual(fromEnv, { engine: 'postgres', url, display: 'postgres://factory:***@db.internal:5432/factory' });
  const fromFlag = parseConfig({ database: 'postgresql://db/f' }, { FACTORY_DATABASE_URL: url, FACTORY_MASTER_KEY: key }, '/srv').database;
  assert.equal(fromFlag.engine === 'postgres' && fromFlag.url, 'postgresql://db/f', 'the flag wins');

  const refused = (flags: Record<string, string>, env: Record<string, string>, pattern: RegExp) =>
    assert.throws(() => parseConfig(flags, env, '/srv'), (err: unknown) => {
      assert.ok(err instanceof CliError);
      assert.equal(err.exitCode, 2);
      assert.match(err.message, pattern);
      assert.ok(!err.message.includes('s3cret'), `the password stays out of: ${err.message}`);
      return true;
    });
  refused({}, { FACTORY_DATABASE_URL: url }, /^FACTORY_MASTER_KEY is required with FACTORY_DATABASE_URL: every replica must decrypt the same team secrets/);
  refused({ database: url }, {}, /^FACTORY_MASTER_KEY is required with --database/);
  refused({ database: 'mysql://u:s3cret@db/f' }, { FACTORY_MASTER_KEY: key }, /^--database must be a PostgreSQL URL such as postgres:\/\/user@host:5432\/factory, got "mysql:\/\/u:\*\*\*@db\/f"\.$/);
  refused({ database: 'not a url' }, { FACTORY_MASTER_KEY: key }, /^--database must be a PostgreSQL URL/);
});

test('workers: --no-executor and FACTORY_NO_EXECUTOR turn the pool off; --lease-seconds and FACTORY_LEASE_SECONDS set the lease (docs/runs.md#workers)', () => {
  const d = parseConfig({}, {});
  assert.equal(d.executeRuns, true);
  assert.equal(d.leaseSeconds, 30);
  // commander's --no-executor sets executor to false; the executor kind then keeps its default.
  const off = parseConfig({ executor: false }, {});
  assert.equal(off.executeRuns, false);
  assert.equal(off.executor, parseConfig({}, {}).executor);
  assert.equal(parseConfig({}, { FACTORY_NO_EXECUTOR: 'true' }).executeRuns, false);
  assert.equal(parseConfig({ executor: 'direct' }, { FACTORY_NO_EXECUTOR: 'no' }).executeRuns, true);
  assert.equal(parseConfig({ leaseSeconds: '5' }, { FACTORY_LEASE_SECONDS: '60' }).leaseSeconds, 5);
  assert.equal(parseConfig({}, { FACTORY_LEASE_SECONDS: '60' }).leaseSeconds, 60);
  for (const [flags, env, re] of [
    [{ leaseSeconds: '2' }, {}, /--lease-seconds/],
    [{}, { FACTORY_LEASE_SECONDS: 'soon' }, /FACTORY_LEASE_SECONDS/],
    [{}, { FACTORY_NO_EXECUTOR: 'maybe' }, /FACTORY_NO_EXECUTOR/],
  ] as [Parameters<typeof parseConfig>[0], Record<string, string>, RegExp][]) {
    assert.throws(() => parseConfig(flags, env), (e: unknown) => e instanceof CliError && e.exitCode === 2 && re.test(e.message));
  }
});
