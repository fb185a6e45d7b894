import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execCli, startCli } from '../../helpers/cli.ts';
import { postgresUrl } from '../../helpers/postgres.ts';

/** Starts `factory serve` as a child process; `started` resolves once it printed its URL and key line. */
function serve(dataDir: string) {
  const serving = startCli(['serve', '--port', '0', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '', FACTORY_LOG_LEVEL: 'warn' } });
  const started = serving
    .waitFor(() => /listening on http:\/\/\S+\n/.test(serving.stdout()) && /admin key: .*\n/.test(serving.stdout()), 'the URL and the admin key')
    .then(() => ({ url: /listening on (http:\/\/\S+)\n/.exec(serving.stdout())![1], out: serving.stdout }));
  return { child: serving.child, started, exited: serving.closed };
}

test('factory serve: prints URL and admin key path; SIGTERM exits 0; a restart keeps the key', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-serve-'));
  try {
    const first = serve(dataDir);
    const { url, out } = await first.started;
    assert.match(out(), new RegExp(`admin key: ${join(dataDir, 'admin.key').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(created now`));
    const key = readFileSync(join(dataDir, 'admin.key'), 'utf8').trim();
    assert.equal(statSync(join(dataDir, 'admin.key')).mode & 0o777, 0o600);
    assert.ok(!out().includes(key), 'the key is never printed');
    const res = await fetch(url + '/api/v1/keys', { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    assert.match(out(), /received SIGTERM/);

    const second = serve(dataDir);
    const s = await second.started;
    assert.doesNotMatch(s.out(), /created now/);
    assert.equal(readFileSync(join(dataDir, 'admin.key'), 'utf8').trim(), key);
    const keys = (await (await fetch(s.url + '/api/v1/keys', { headers: { Authorization: `Bearer ${key}` } })).json()) as { keys: unknown[] };
    assert.equal(keys.keys.length, 1);
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 0);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('factory serve: an invalid flag is a usage error naming it', async () => {
  const bad = await execCli(['serve', '--port', 'http'], { env: { PATH: process.env.PATH ?? '' } });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--port must be an integer/);
});

test('factory serve: a --host it cannot listen on is one sentence naming the address and why, exit 1, and no key is written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-serve-host-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cases: [string, RegExp][] = [
    // TEST-NET-1 (RFC 5737): never an address of this machine.
    ['192.0.2.1', /^error: cannot listen on 192\.0\.2\.1:0: 192\.0\.2\.1 is no address of this machine; pass --host with one of its addresses, e\.g\. 127\.0\.0\.1, or 0\.0\.0\.0 for all of them\.\n$/],
    ['not a host', /^error: cannot listen on port 0 of "not a host": the host name does not resolve to an address \((ENOTFOUND|EAI_AGAIN|EAI_FAIL)\); pass --host with an address of this machine, e\.g\. 127\.0\.0\.1, or 0\.0\.0\.0 for all of them\.\n$/],
  ];
  for (const [host, sentence] of cases) {
    const dataDir = join(dir, host.replace(/\W/g, '-'));
    const res = await execCli(['serve', '--host', host, '--port', '0', '--data-dir', dataDir, '--executor', 'direct'], { env: { PATH: process.env.PATH ?? '', FACTORY_LOG_LEVEL: 'warn' } });
    assert.equal(res.code, 1, host);
    assert.match(res.stderr, sentence);
    assert.equal(res.stdout, '', host);
    assert.deepEqual(readdirSync(dataDir), ['runtime.lock'], `no admin.key, master.key or database for ${host}`);
  }
});

/** libfaketime (Debian's `faketime`), which moves a process's clock; why it cannot be used, or false. In CI a missing one is a failure. */
const FAKETIME_LIB = `/usr/lib/${arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/faketime/libfaketime.so.1`;
function faketimeMissing(): string | false {
  if (existsSync(FAKETIME_LIB)) return false;
  if (process.env.CI === 'true') throw new Error('CI=true and libfaketime is not installed (apt-get install faketime)');
  return 'libfaketime is not installed (apt-get install faketime)';
}

test('factory serve on PostgreSQL: a machine whose clock is 90 s ahead of the database refuses to start, in one sentence, exit 1, writing no key', { skip: faketimeMissing() }, async (t) => {
  const url = await postgresUrl(t);
  if (url === undefined) return;
  const dataDir = mkdtempSync(join(tmpdir(), 'factory-serve-clock-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { PATH: process.env.PATH ?? '', FACTORY_LOG_LEVEL: 'warn', FACTORY_MASTER_KEY: randomBytes(32).toString('base64') };
  const args = ['serve', '--port', '0', '--data-dir', dataDir, '--database', url, '--executor', 'direct'];
  // The whole process, its threads included, reads a clock 90 s ahead of the machine's.
  const ahead = await execCli(args, { env: { ...env, LD_PRELOAD: FAKETIME_LIB, FAKETIME: '+90s' }, limitMs: 60_000 });
  assert.equal(ahead.code, 1, ahead.stderr);
  assert.match(
    ahead.stderr,
    /^error: this machine's clock is 9\d\.\d s ahead of the clock of PostgreSQL at postgres:\/\/[^ ]*, more than the 5 s replicas may differ by \(they compare the times each of them writes, such as when a run's lease runs out\); set the clock right \(NTP\) and start again\.\n$/,
  );
  assert.equal(ahead.stdout, '');
  assert.deepEqual(readdirSync(dataDir), ['runtime.lock'], 'no admin.key');

  // The same machine with its own clock starts, and says how far the clocks are apart.
  const serving = startCli(args, { env: { ...env, FACTORY_LOG_LEVEL: 'info' } });
  await serving.waitFor(() => /listening on http:\/\/\S+\n/.test(serving.stdout()), 'the URL');
  assert.match(serving.stdout(), /"msg":"this machine's clock agrees with the database's"/);
  serving.child.kill('SIGTERM');
  assert.equal(await serving.closed, 0);
});
