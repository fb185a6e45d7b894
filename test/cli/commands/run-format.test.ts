import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatEvent, type TranscriptEvent } from '../../../cli/commands/run.ts';

/** How `factory run transcript` prints each event kind. */

const ev = (type: string, data: Record<string, unknown>): TranscriptEvent => ({ seq: 1, time: '2026-11-23T00:00:00.000Z', type, data }) as TranscriptEvent;

test('a setup command is a header with its status, its output indented below', () => {
  assert.equal(
    formatEvent(ev('command', { phase: 'setup', text: 'npm ci', exit_code: 0, duration_ms: 12, output: 'added 1 package\n' })),
    '$ npm ci  (setup, exit 0, 12 ms)\n  added 1 package\n',
  );
  assert.equal(formatEvent(ev('command', { phase: 'setup', text: 'sleep 9', exit_code: null, signal: 'SIGKILL', duration_ms: 5, output: '' })), '$ sleep 9  (setup, signal SIGKILL, 5 ms)\n');
});

test("the agent's command closes its streamed output instead of heading it", () => {
  assert.equal(
    formatEvent(ev('command', { phase: 'agent', text: 'node agent.mjs', exit_code: 1, duration_ms: 40 })),
    '$ node agent.mjs  (agent ended: exit 1, 40 ms; its output is above)\n',
  );
});

test('output, messages, file changes and states', () => {
  assert.equal(formatEvent(ev('output', { stream: 'stdout', text: 'hello\n' })), 'hello\n');
  assert.equal(formatEvent(ev('message', { kind: 'tool_use', tool: 'Bash', input: 'ls' })), '[tool_use Bash] ls\n');
  assert.equal(formatEvent(ev('file_change', { kind: 'modified', repo: 'app', path: 'README.md' })), 'modified app/README.md\n');
  assert.equal(formatEvent(ev('state', { from: 'INPROGRESS', to: 'FAILED', status_message: 'the agent exited with code 1' })), '-- FAILED: the agent exited with code 1\n');
});

test("an argv (the agent's command, git) is printed as a shell would need it typed", () => {
  assert.equal(
    formatEvent(ev('command', { phase: 'agent', text: '/bin/sh -c echo agent says hi', argv: ['/bin/sh', '-c', "echo 'agent' says hi"], exit_code: 0, duration_ms: 3 })),
    `$ /bin/sh -c 'echo '\\''agent'\\'' says hi'  (agent ended: exit 0, 3 ms; its output is above)\n`,
  );
  assert.equal(formatEvent(ev('command', { phase: 'repo', text: 'git clone a b', argv: ['git', 'clone', '--depth=1', 'https://x/y.git', ''], exit_code: 0, duration_ms: 1 })), "$ git clone --depth=1 https://x/y.git ''  (repo, exit 0, 1 ms)\n");
});
