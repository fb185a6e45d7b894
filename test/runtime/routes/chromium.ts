import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/**
 * A headless Chromium driven through the DevTools protocol over a pipe (`--remote-debugging-pipe`:
 * the browser reads commands on fd 3 and writes answers on fd 4, each a JSON text ended by NUL),
 * so a test can type, click and read the real page without a WebSocket or a driver package.
 */

export const CHROMIUM = '/usr/bin/chromium';

/** What the page reported on its own: uncaught exceptions, unhandled rejections, console and network errors. */
export type PageProblem = string;

export interface BrowserPage {
  /** Evaluates an expression in the page (awaiting a promise) and returns its JSON value; a throw rejects. */
  eval<T = unknown>(expression: string): Promise<T>;
  /**
   * Resolves once `expression` is truthy in the page (checked every 20 ms there), with its value;
   * rejects as soon as the page reports a problem, so a broken page fails fast instead of waiting
   * for the safety net.
   */
  waitFor<T = unknown>(expression: string, what: string): Promise<T>;
  /** Everything the page reported so far. */
  readonly problems: PageProblem[];
}

/**
 * Starts Chromium, opens `url` in a fresh profile, runs `fn` with the page and always kills the
 * browser's process group and removes the profile. A safety net (not a timed assertion) rejects
 * if the whole session takes longer than `limitMs`, so a hung browser cannot hang the suite.
 */
export async function withBrowserPage(url: string, fn: (page: BrowserPage) => Promise<void>, limitMs = 25_000): Promise<void> {
  const profile = mkdtempSync(join(tmpdir(), 'factory-chromium-'));
  const child = spawn(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--remote-debugging-pipe', `--user-data-dir=${profile}`, 'about:blank'],
    { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
  );
  const cdp = new Cdp(child);
  let timer: NodeJS.Timeout | undefined;
  const safety = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the browser session did not finish within ${limitMs} ms`)), limitMs);
  });
  try {
    await Promise.race([safety, cdp.died, run()]);
  } finally {
    clearTimeout(timer);
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    rmSync(profile, { recursive: true, force: true });
  }

  async function run(): Promise<void> {
    const { targetId } = await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    const problems: PageProblem[] = [];
    let onProblem = (): void => {};
    cdp.onEvent = (method, params, sid) => {
      if (sid !== sessionId) return;
      const p = params as Record<string, any>;
      let problem: string | undefined;
      if (method === 'Runtime.exceptionThrown') problem = `exception: ${p.exceptionDetails?.exception?.description ?? p.exceptionDetails?.text}`;
      else if (method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert')) problem = `console.${p.type}: ${p.args?.map((a: any) => a.value ?? a.description).join(' ')}`;
      else if (method === 'Log.entryAdded' && p.entry?.level === 'error') problem = `log: ${p.entry.text} ${p.entry.url ?? ''}`.trim();
      if (problem) {
        problems.push(problem);
        onProblem();
      }
    };
    await cdp.send('Runtime.enable', {}, sessionId);
    await cdp.send('Log.enable', {}, sessionId);
    await cdp.send('Page.enable', {}, sessionId);
    const loaded = cdp.next('Page.loadEventFired', sessionId);
    await cdp.send('Page.navigate', { url }, sessionId);
    await loaded;

    const evaluate = async <T>(expression: string): Promise<T> => {
      const r = await cdp.send<{ result: { value?: T }; exceptionDetails?: { exception?: { description?: string }; text: string } }>(
        'Runtime.evaluate',
        { expression, awaitPromise: true, returnByValue: true },
        sessionId,
      );
      if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
      return r.result.value as T;
    };
    const page: BrowserPage = {
      problems,
      eval: evaluate,
      waitFor<T>(expression: string, what: string): Promise<T> {
        const waiting = evaluate<T>(`new Promise((resolve) => {
          const check = () => { const v = (${expression}); if (v) resolve(v); else setTimeout(check, 20); };
          check();
        })`);
        const failed = new Promise<never>((_, reject) => {
          const fail = () => reject(new Error(`waiting for ${what}, the page reported: ${problems.join('; ')}`));
          if (problems.length) fail();
          onProblem = fail;
        });
        return Promise.race([waiting, failed]).finally(() => (onProblem = () => {}));
      },
    };
    await fn(page);
  }
}

/** The protocol client: numbered commands, their answers, and events. */
class Cdp {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void; method: string }>();
  private readonly waiters: { method: string; sessionId?: string; resolve: () => void }[] = [];
  private readonly input: Writable;
  onEvent: (method: string, params: unknown, sessionId?: string) => void = () => {};
  /** Rejects when the browser exits or fails to start. */
  readonly died: Promise<never>;

  constructor(child: ChildProcess) {
    this.input = child.stdio[3] as Writable;
    // A write after the browser exited fails with EPIPE; `died` reports the exit.
    this.input.on('error', () => {});
    const output = child.stdio[4] as Readable;
    let buffer = '';
    output.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\0'); end >= 0; end = buffer.indexOf('\0')) {
        this.dispatch(JSON.parse(buffer.slice(0, end)));
        buffer = buffer.slice(end + 1);
      }
    });
    this.died = new Promise<never>((_, reject) => {
      child.on('error', reject);
      child.on('exit', (code, signal) => reject(new Error(`chromium exited (${code ?? signal})`)));
    });
    // Only the race in withBrowserPage observes it.
    this.died.catch(() => {});
  }

  send<T = unknown>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.input.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    });
  }

  /** Resolves at the next event `method` (of the session). */
  next(method: string, sessionId?: string): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ method, sessionId, resolve }));
  }

  private dispatch(msg: { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: unknown; sessionId?: string }): void {
    if (msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
      return;
    }
    if (!msg.method) return;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i];
      if (w.method === msg.method && (w.sessionId === undefined || w.sessionId === msg.sessionId)) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
    this.onEvent(msg.method, msg.params, msg.sessionId);
  }
}
