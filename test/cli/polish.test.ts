import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { runCli } from '../../cli/main.ts';
import { startTestRuntime } from '../runtime/helpers.ts';
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
