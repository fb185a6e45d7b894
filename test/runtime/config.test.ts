import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CliError } from '../../core/errors.ts';
import { DEFAULT_LIMITS, parseConfig } from '../../runtime/config.ts';

test('defaults follow SPEC 5 and 11', () => {
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
    [{}, { FACTORY_TRUST_PROXY: 'maybe' }, /FACTORY_TRUST_PROXY/],
    [{ baseUrl: 'ftp://x' }, {}, /--base-url/],
    [{}, { FACTORY_LOG_LEVEL: 'loud' }, /FACTORY_LOG_LEVEL/],
    [{}, { FACTORY_RATE_DELIVERIES_PER_MINUTE: '-1' }, /FACTORY_RATE_DELIVERIES_PER_MINUTE/],
  ];
  for (const [flags, env, re] of cases) {
    assert.throws(() => parseConfig(flags, env), (e: unknown) => e instanceof CliError && e.exitCode === 2 && re.test(e.message));
  }
});

test('limit overrides for tests', () => {
  assert.equal(parseConfig({ limits: { ingressBodyBytes: 10 } }, {}).limits.ingressBodyBytes, 10);
});

test('inheritedEnv holds only the variables agents inherit, from the env given, frozen (SPEC 9)', () => {
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
