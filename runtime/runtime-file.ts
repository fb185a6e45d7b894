import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What `<dataDir>/runtime.json` holds: where this process listens, for the CLI (docs/runtime.md). */
export interface RuntimeFile {
  url: string;
  pid: number;
  started_at: string;
}

/**
 * The data dir's runtime.json, when it holds at least a `url` and a `pid` (the CLI finds the
 * runtime by it; a second runtime names the first with it). Undefined when missing or unreadable.
 */
export function readRuntimeFile(dataDir: string): { url: string; pid: number; path: string } | undefined {
  const path = join(dataDir, 'runtime.json');
  try {
    const r = JSON.parse(readFileSync(path, 'utf8')) as Partial<RuntimeFile>;
    return typeof r.url === 'string' && typeof r.pid === 'number' ? { url: r.url, pid: r.pid, path } : undefined;
  } catch {
    return undefined;
  }
}
