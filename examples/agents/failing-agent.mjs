#!/usr/bin/env node
// A scripted agent that fails: it reads its prompt, says why it gives up, and exits 3, so a run
// ends FAILED with "agent exited with exit code 3".
import { readFileSync } from 'node:fs';

const prompt = readFileSync(0, 'utf8');
console.log(`failing-agent: received a prompt of ${prompt.length} characters`);
console.error('failing-agent: giving up on purpose');
process.exit(3);
