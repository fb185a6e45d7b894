import { existsSync } from 'node:fs';
import { after } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * A real page in Debian's headless Chromium, driven by playwright-core. Playwright never downloads
 * a browser here: it launches the system's /usr/bin/chromium (`apt-get install chromium`).
 */

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Whether the browser tests can run. Outside CI a missing browser skips them with one line saying
 * how to get it; with CI=true it is a failure, so CI never passes by skipping.
 */
export function browserSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  if (process.env.CI === 'true') throw new Error(`CI=true and ${CHROMIUM} is missing: apt-get install chromium`);
  return `${CHROMIUM} is missing (apt-get install chromium); the browser tests are skipped`;
}

export interface BrowserOptions {
  /** Problems matching this are expected (say, a 401 the test provokes) and do not fail the session. */
  tolerate?: RegExp;
}

/**
 * One browser for the whole test file, started at first use and closed after the file's tests (a
 * root-level hook, registered when a test file imports this module); a browser that died is
 * started again. Each session gets its own context, so no state leaks from one test to the next.
 */
let shared: Promise<Browser> | undefined;
async function browser(): Promise<Browser> {
  if (shared && !(await shared.then((b) => b.isConnected(), () => false))) shared = undefined;
  shared ??= chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
  return shared;
}
after(async () => {
  const b = await shared?.catch(() => undefined);
  await b?.close();
});

/**
 * Opens `url` in a fresh browser context (its own sessionStorage), runs `fn` with the page and
 * always closes the context. Whatever the page reports on its own (an uncaught exception or
 * unhandled rejection, a console error, a resource that failed to load or was blocked by the CSP, a
 * crash) fails the session at once, so a broken page fails fast instead of waiting out a timeout.
 * Playwright's timeouts are only a safety net against a hung browser, never an assertion.
 */
export async function withBrowserPage(url: string, fn: (page: Page) => Promise<void>, options: BrowserOptions = {}): Promise<void> {
  const context = await (await browser()).newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems: string[] = [];
    let fail: (err: Error) => void = () => {};
    const failed = new Promise<never>((_, reject) => (fail = reject));
    // Only the races below observe it.
    failed.catch(() => {});
    const report = (problem: string): void => {
      if (options.tolerate?.test(problem)) return;
      problems.push(problem);
      fail(new Error(`the page reported: ${problems.join('; ')}`));
    };
    page.on('pageerror', (err) => report(`exception: ${err.stack ?? err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'assert') report(`console.${msg.type()}: ${msg.text()} ${msg.location().url}`.trim());
    });
    page.on('crash', () => report('the page crashed'));

    await Promise.race([failed, page.goto(url)]);
    const running = fn(page);
    // After a problem the race settles first; the test's own rejection (the page closing under
    // it) would otherwise be unhandled.
    running.catch(() => {});
    await Promise.race([failed, running]);
    if (problems.length) await failed;
  } finally {
    await context.close();
  }
}

/** Types the key into the dashboard's sign-in form (shown only once its modules run) and submits it. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** Where the page keeps the key: this tab's sessionStorage (docs/dashboard.md). */
export const storedKey = (page: Page): Promise<string | null> => page.evaluate<string | null>(`sessionStorage.getItem('factory.apiKey')`);
