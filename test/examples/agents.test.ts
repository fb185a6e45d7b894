import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const AGENTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/agents');

function workspace(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-agents-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('scripted-agent reads the prompt and the payload, and edits app/AGENT_NOTES.md', (t) => {
  const ws = workspace(t);
  mkdirSync(path.join(ws, 'app'));
  execFileSync('git', ['init', '--quiet'], { cwd: path.join(ws, 'app') });
  writeFileSync(path.join(ws, 'event-payload.json'), '{"action":"closed","issue":{}}');
  const r = spawnSync('node', [path.join(AGENTS, 'scripted-agent.mjs')], {
    cwd: ws,
    input: 'Triage the issue.\n',
    encoding: 'utf8',
    env: { PATH: process.env.PATH, FACTORY_RUN_ID: 'run_x' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /first line: Triage the issue\./);
  assert.match(r.stdout, /event payload keys: action, issue/);
  assert.match(r.stdout, /event action: closed/);
  assert.match(r.stdout, /\$ git status --short/);
  assert.equal(readFileSync(path.join(ws, 'app/AGENT_NOTES.md'), 'utf8'), '- run_x: Triage the issue.\n');
});

test('scripted-agent without app/ writes notes.md', (t) => {
  const ws = workspace(t);
  const r = spawnSync('node', [path.join(AGENTS, 'scripted-agent.mjs')], { cwd: ws, input: 'Hello', encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(readFileSync(path.join(ws, 'notes.md'), 'utf8'), /Hello/);
});

test('failing-agent exits 3', (t) => {
  const ws = workspace(t);
  const r = spawnSync('node', [path.join(AGENTS, 'failing-agent.mjs')], { cwd: ws, input: 'x', encoding: 'utf8' });
  assert.equal(r.status, 3);
  assert.match(r.stderr, /giving up/);
});

test('claude-stream-agent prints stream-json lines', (t) => {
  const ws = workspace(t);
  const r = spawnSync('node', [path.join(AGENTS, 'claude-stream-agent.mjs')], { cwd: ws, input: 'x', encoding: 'utf8' });
  assert.equal(r.status, 0);
  const json = r.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l).type);
  assert.deepEqual(json, ['system', 'assistant', 'assistant', 'user', 'result']);
});
