#!/usr/bin/env node
// Prints a short, fixed Claude Code `--output-format stream-json` session (NDJSON) for an
// environment with `agent.format: claude-stream-json`; no model is involved.
import { readFileSync } from 'node:fs';

const prompt = readFileSync(0, 'utf8');
const session_id = 'scripted-session';
const lines = [
  { type: 'system', subtype: 'init', session_id, model: 'scripted', tools: ['Bash'] },
  { type: 'assistant', session_id, message: { role: 'assistant', content: [{ type: 'text', text: `I read a prompt of ${prompt.length} characters.` }] } },
  { type: 'assistant', session_id, message: { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }] } },
  { type: 'user', session_id, message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'prompt.md' }] } },
  { type: 'result', subtype: 'success', is_error: false, result: 'Done.', num_turns: 2, duration_ms: 5, session_id },
];
for (const l of lines) process.stdout.write(JSON.stringify(l) + '\n');
process.stdout.write('this line is not JSON\n');
