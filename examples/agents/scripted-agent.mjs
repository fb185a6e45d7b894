#!/usr/bin/env node
// A scripted agent with no model (docs/runs.md): it does what a coding agent does, deterministically,
// so examples and tests run a real process end to end. Plain Node, no dependencies.
// It reads the prompt from stdin, summarises event-payload.json when present, runs a couple of
// shell commands, appends a line to a file in the workspace and exits 0.
import { execSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, statSync } from 'node:fs';

const prompt = readFileSync(0, 'utf8');
const firstLine = prompt.split('\n').find((l) => l.trim()) ?? '';
console.log(`scripted-agent: run ${process.env.FACTORY_RUN_ID ?? '(no run id)'}`);
console.log(`scripted-agent: prompt has ${prompt.length} characters; first line: ${firstLine.slice(0, 200)}`);

if (existsSync('event-payload.json')) {
  try {
    const payload = JSON.parse(readFileSync('event-payload.json', 'utf8'));
    const keys = payload && typeof payload === 'object' && !Array.isArray(payload) ? Object.keys(payload) : [];
    console.log(`scripted-agent: event payload keys: ${keys.join(', ') || '(none)'}`);
    if (typeof payload?.action === 'string') console.log(`scripted-agent: event action: ${payload.action}`);
  } catch (err) {
    console.log(`scripted-agent: event-payload.json is not JSON (${err.message})`);
  }
}

const target = existsSync('app') && statSync('app').isDirectory() ? 'app' : '.';
for (const cmd of ['ls', 'git status --short']) {
  try {
    const out = execSync(cmd, { cwd: target, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    console.log(`$ ${cmd}\n${out.trimEnd()}`);
  } catch (err) {
    console.log(`$ ${cmd}\n(failed: ${String(err.message).split('\n')[0]})`);
  }
}

const notes = target === 'app' ? 'app/AGENT_NOTES.md' : 'notes.md';
appendFileSync(notes, `- ${process.env.FACTORY_RUN_ID ?? 'run'}: ${firstLine.slice(0, 120)}\n`);
console.log(`scripted-agent: appended a line to ${notes}`);
console.error('scripted-agent: done');
