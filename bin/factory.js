#!/usr/bin/env node
// Launches the TypeScript CLI through tsx, so the source runs as written (no build step).
import { register } from 'tsx/esm/api';
register();
process.env.FACTORY_CLI_ENTRY = '1';
await import('../cli/main.ts');
