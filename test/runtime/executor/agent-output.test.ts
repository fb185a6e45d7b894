import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentOutput } from '../../../runtime/executor/agent-output.ts';
import { claudeStreamReader } from '../../../runtime/executor/readers.ts';
import { DEFAULT_CAPS, type TranscriptEventInput } from '../../../runtime/executor/transcript.ts';

/** Agent output into transcript events (runtime/executor/agent-output.ts): lines, readers and caps. */

const collect = (reader: ReturnType<typeof claudeStreamReader> | null = claudeStreamReader(DEFAULT_CAPS.lineBytes)) => {
  const events: TranscriptEventInput[] = [];
  return { out: new AgentOutput(reader, DEFAULT_CAPS, (e) => events.push(e)), events };
};

test('a JSON line far over the plain line cap is read whole, however the pipe splits it', () => {
  const line = JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'x'.repeat(100_000) }] } }) + '\n';
  for (const pieces of [[line], [line.slice(0, 30_000), line.slice(30_000)], Array.from({ length: 20 }, (_, i) => line.slice(i * 5_100, (i + 1) * 5_100))]) {
    const { out, events } = collect();
    for (const p of pieces) out.write('stdout', Buffer.from(p));
    out.end();
    assert.equal(events.filter((e) => e.type === 'output').length, 0, `no raw JSON fragments (${pieces.length} pieces)`);
    assert.ok(events.some((e) => e.type === 'message'), 'the tool result is one message');
  }
});

test('a line kept as output comes in pieces of at most the line cap, even when it arrived in one chunk', () => {
  const { out, events } = collect(null);
  out.write('stdout', Buffer.from('y'.repeat(40_000) + '\n'));
  out.end();
  const outputs = events.filter((e) => e.type === 'output').map((e) => String(e.data.text));
  assert.equal(outputs.join(''), 'y'.repeat(40_000) + '\n');
  for (const text of outputs) for (const part of text.split('\n')) assert.ok(Buffer.byteLength(part) <= DEFAULT_CAPS.lineBytes, `${Buffer.byteLength(part)} bytes in one line`);
});

test('a JSON line nested thousands deep is kept as output, for both JSON formats, and never throws', async () => {
  const { codexJsonReader } = await import('../../../runtime/executor/readers.ts');
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const lines = [
    JSON.stringify({ type: 'item.completed', item: { type: 'todo_list', items: [] } }).replace('"items":[]', `"items":${deep(20_000)}`),
    JSON.stringify({ type: 'assistant', message: { content: [{ type: 'tool_use', name: 'x', input: {} }] } }).replace('"input":{}', `"input":${deep(20_000)}`),
  ];
  for (const reader of [codexJsonReader(DEFAULT_CAPS.lineBytes), claudeStreamReader(DEFAULT_CAPS.lineBytes)]) {
    for (const line of lines) {
      const events: TranscriptEventInput[] = [];
      const out = new AgentOutput(reader, DEFAULT_CAPS, (e) => events.push(e));
      out.write('stdout', Buffer.from(line + '\nafter\n'));
      out.end();
      const text = events.filter((e) => e.type === 'output').map((e) => String(e.data.text)).join('');
      assert.ok(text.endsWith('after\n'), 'the output after it is still read');
    }
  }
});
