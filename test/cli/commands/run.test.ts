import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Readable } from 'node:stream';
import { runCli } from '../../../cli/main.ts';
import type { CliIO } from '../../../cli/io.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { AGENTS, applyEnvironments, envYaml } from '../../runtime/routes/runs-helpers.ts';

function bufferIO(env: Record<string, string>): CliIO & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: (s: string) => void (io.out += s),
    stderr: (s: string) => void (io.err += s),
    env,
    cwd: process.cwd(),
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stdoutIsTTY: false,
  };
  return io;
}

test('factory run create --wait, get, list, transcript and cancel against a real runtime', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  await applyEnvironments(rt, {
    ok: envYaml({ setup: ['echo hello from setup'], command: ['node', path.join(AGENTS, 'scripted-agent.mjs')] }),
    bad: envYaml({ command: ['node', path.join(AGENTS, 'failing-agent.mjs')] }),
  });
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cli = async (...args: string[]) => {
    const io = bufferIO(env);
    const code = await runCli(args, io);
    return { code, out: io.out, err: io.err };
  };

  const ok = await cli('run', 'create', '--prompt', 'Write notes', '--environment', 'ok', '--wait', '--poll-interval', '50');
  assert.equal(ok.code, 0, ok.err);
  const runId = /^(run_\S+) SUCCEEDED/.exec(ok.out)?.[1];
  assert.ok(runId, ok.out);
  assert.match(ok.out, new RegExp(`session: ${rt.url}/sessions/${runId}`));

  const failed = await cli('run', 'create', '--prompt', 'x', '--environment', 'bad', '--wait', '--poll-interval', '50');
  assert.equal(failed.code, 1);
  assert.match(failed.out, /FAILED: agent exited with exit code 3/);

  const get = await cli('run', 'get', runId!, '--json');
  assert.equal(JSON.parse(get.out).state, 'SUCCEEDED');

  const list = await cli('run', 'list', '--state', 'FAILED', '--json');
  assert.deepEqual(JSON.parse(list.out).runs.map((r: { state: string }) => r.state), ['FAILED']);

  const transcript = await cli('run', 'transcript', runId!, '--follow', '--poll-interval', '50');
  assert.equal(transcript.code, 0);
  assert.match(transcript.out, /\$ echo hello from setup {2}\(setup, exit 0, \d+ ms\)\n {2}hello from setup/);
  assert.match(transcript.out, /-- SUCCEEDED/);

  const cancel = await cli('run', 'cancel', runId!);
  assert.equal(cancel.code, 1);
  assert.match(cancel.err, /already finished/);

  const usage = await cli('run', 'create', '--prompt', 'x');
  assert.equal(usage.code, 2);
});
