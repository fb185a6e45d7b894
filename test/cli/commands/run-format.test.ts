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

test('what the run printed cannot drive the terminal: colour is dropped, other control characters are shown', () => {
  const hostile = 'a\x1b[31mred\x1b[0m b\x1b]0;pwned title\x07 c\x1b]52;c;ZXZpbA==\x07 d\r\ne\rf\u009b2J g\x7f\tend\n';
  const shown = formatEvent(ev('output', { stream: 'stdout', text: hostile }));
  assert.equal(shown, 'ared b\\x1b]0;pwned title\\x07 c\\x1b]52;c;ZXZpbA==\\x07 d\ne\\x0df\\x9b2J g\\x7f\tend\n');
  // eslint-disable-next-line no-control-regex
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(shown));
  assert.equal(formatEvent(ev('state', { to: 'FAILED', status_message: 'x\x1b[2Ky' })), '-- FAILED: x\\x1b[2Ky\n');
});
