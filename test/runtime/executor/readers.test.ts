import { test } from 'node:test';
import assert from 'node:assert/strict';
import { claudeStreamReader, codexJsonReader, readerFor } from '../../../runtime/executor/readers.ts';

const claude = claudeStreamReader(1000);
const codex = codexJsonReader(1000);

test('claude-stream-json: system, assistant blocks, tool results and the result line', () => {
  const lines = [
    '{"type":"system","subtype":"init","session_id":"s1","model":"claude-x","tools":["Bash"]}',
    '{"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}',
    '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a\\nb"}],"is_error":false}]}}',
    '{"type":"result","subtype":"success","is_error":false,"result":"Done","num_turns":3,"duration_ms":1200,"total_cost_usd":0.01}',
  ];
  const events = lines.flatMap((l) => claude(l) ?? []);
  assert.ok(events.every((e) => e.type === 'message' && e.data.format === 'claude-stream-json'));
  assert.deepEqual(
    events.map((e) => [e.data.kind, e.data.text ?? e.data.tool ?? e.data.model]),
    [['system', 'claude-x'], ['thinking', 'hmm'], ['text', 'Looking.'], ['tool_use', 'Bash'], ['tool_result', 'a\nb'], ['result', 'Done']],
  );
  assert.equal(events[3].data.input, '{"command":"ls"}');
  assert.equal(events[5].data.num_turns, 3);
});

test('codex-json: thread, items and turn events', () => {
  const lines = [
    '{"type":"thread.started","thread_id":"th_1"}',
    '{"type":"turn.started"}',
    '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}',
    '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"README.md\\n","exit_code":0,"status":"completed"}}',
    '{"type":"item.completed","item":{"id":"item_2","type":"reasoning","text":"Thinking about it"}}',
    '{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"a.txt","kind":"update"}],"status":"completed"}}',
    '{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"All done."}}',
    '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}',
    '{"type":"turn.failed","error":{"message":"stream disconnected"}}',
    '{"type":"error","message":"fatal"}',
  ];
  const events = lines.flatMap((l) => codex(l) ?? []);
  assert.deepEqual(
    events.map((e) => e.data.kind),
    ['system', 'command', 'thinking', 'file_change', 'text', 'result', 'error', 'error'],
  );
  assert.equal(events[1].data.exit_code, 0);
  assert.equal(events[1].data.text, 'README.md\n');
  assert.equal(events[4].data.text, 'All done.');
  assert.deepEqual(events[5].data.usage, { input_tokens: 10, cached_input_tokens: 0, output_tokens: 5 });
  assert.equal(events[6].data.text, 'stream disconnected');
});

test('lines that are not events of the format are left to the caller as output', () => {
  for (const line of ['plain text', '[1,2]', '{"no_type":1}', '{"type":', '']) {
    assert.equal(claude(line), null, line);
    assert.equal(codex(line), null, line);
  }
});

test('long message text is capped and marked', () => {
  const small = claudeStreamReader(10);
  const [e] = small(JSON.stringify({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: 'é'.repeat(50) }] } }))!;
  assert.equal(e.data.text, 'é'.repeat(5));
  assert.equal(e.data.truncated, true);
});

test('text has no reader', () => {
  assert.equal(readerFor('text', 10), null);
  assert.ok(readerFor('codex-json', 10));
});
