import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCli, terminalEnv, type RunningCli } from '../helpers/cli.ts';
import { sectionOf, shellLines, terminal, type Step } from '../helpers/terminal.ts';

/**
 * The README's tour, as written: its shell block is read from README.md and pasted line by line
 * into one real bash (so the alias and the variables of earlier lines hold), in a second
 * "terminal" beside `npm start`'s command (read from package.json) on a free port. Each line's key
 * output is checked; a line of the tour without a check here, or a check without its line, fails
 * the test, so the two cannot drift apart. Then the runtime is stopped and `factory serve` started
 * on the same data dir: everything is still there, and the CLI finds the new port by itself.
 *
 * The directory stands in for a checkout: bin/ links to this project's, examples/ is a copy whose
 * sandbox environment clones this project by absolute path (from the copy, `../..` would not be
 * it). Those and the port are the only substitutions. Waits are for output, never for a time.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const CI_UID = 'wh_examplecibuilds2345abcdefg';

const cwd = mkdtempSync(join(tmpdir(), 'factory-tour-'));
const children: ChildProcessWithoutNullStreams[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(cwd, { recursive: true, force: true });
});

test('the README tour works when pasted line by line, and a restart keeps everything it made', async () => {
  // A checkout as the reader has it.
  symlinkSync(join(ROOT, 'bin'), join(cwd, 'bin'));
  cpSync(join(ROOT, 'examples'), join(cwd, 'examples'), { recursive: true });
  const sandbox = join(cwd, 'examples', 'factory', 'environments', 'sandbox.yaml');
  writeFileSync(sandbox, readFileSync(sandbox, 'utf8').replace('url: ../..', `url: ${ROOT}`));

  // Terminal 1: npm start, on a free port.
  const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  // `exec`: npm's own SIGTERM (a process manager stopping it) then reaches the runtime.
  assert.match(start, /^exec tsx cli\/main\.ts dev /);
  const dev = startCli([...start.replace('exec tsx cli/main.ts ', '').split(' '), '--port', '0'], { cwd });
  children.push(dev.child);
  await dev.waitFor(() => dev.stdout().includes('Webhooks:'), 'the first apply');
  const url = /listening on (http:\/\/\S+)/.exec(dev.stdout())![1];
  const port = new URL(url).port;

  // Terminal 2: the tour, each line with the check of what it prints.
  const sh = terminal(cwd, terminalEnv());
  children.push(sh.child);
  let runId = '';
  const checks: [RegExp, (s: Step) => void][] = [
    [/^alias factory=/, () => {}],
    [/^factory webhook list\b/, (s) => {
      for (const name of ['alerts', 'ci', 'github']) assert.match(s.out, new RegExp(`^example\\s+${name}\\s+wh_\\w+\\s+\\S+\\s+enabled`, 'm'));
      assert.ok(s.out.includes(`${url}/webhooks/w/${CI_UID}`), 'the URLs name the port the runtime listens on');
    }],
    [/^factory validate examples\/factory\b/, () => {}],
    [/^factory plan examples\/factory\b/, (s) => assert.match(s.out, /^No changes\. Factory example in the runtime matches the definitions in examples\/factory/)],
    [/^CI_TOKEN=\$\(cat \.factory\/dev-secrets\/ci-webhook-token\)$/, (s) => assert.equal(s.out + s.err, '')],
    [/^curl /, (s) => assert.equal(s.out, '{"delivery_id":"build-42"}')],
    [/^factory delivery list ci\b/, (s) => {
      runId = new RegExp(`Accepted\\s+\\d+\\s+build-42\\s+(run_\\w+)$`, 'm').exec(s.out)?.[1] ?? '';
      assert.ok(runId, `the run the delivery started:\n${s.out}`);
    }],
    [/^factory run list\s*(#|$)/, (s) => assert.match(s.out, new RegExp(`^${runId}\\s+(QUEUED|INPROGRESS|SUCCEEDED)\\s+sandbox\\s+WEBHOOK`, 'm'))],
    [/^factory run transcript \$\(factory run list --limit 1 --quiet\) --follow\b/, (s) => {
      assert.match(s.out, /event-payload\.json/);
      assert.match(s.out, /^-- SUCCEEDED/m);
    }],
    [/^factory automation test ci-failure --delivery build-42\b/, (s) => assert.match(s.out, /^Would trigger\n/)],
    [/^CI_KEY=\$\(factory key create /, (s) => assert.match(s.err, /^created key_\w+ \(agent "ci", scopes: runs\)/)],
    [/^FACTORY_API_KEY=\$CI_KEY factory run create /, (s) => assert.match(s.out, /^run_\w+ SUCCEEDED\n/)],
  ];
  const commands = shellLines(sectionOf(README, '## A tour'));
  assert.deepEqual(
    commands.map((c) => checks.findIndex(([re]) => re.test(c))),
    checks.map((_, i) => i),
    `each line of the tour, in order, has its check:\n${commands.join('\n')}`,
  );
  for (const [i, command] of commands.entries()) {
    const step = await sh.run(command.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`));
    assert.equal(step.code, 0, `${command}\n${step.out}\n${step.err}`);
    checks[i][1](step);
  }
  const webhooks = (await sh.run('factory webhook list')).out;
  const runs = (await sh.run('factory run list --json')).out;
  const secrets = (await sh.run('factory secret list')).out;

  // A clean stop removes runtime.json; `factory serve` on the same data dir picks another port.
  dev.child.kill('SIGTERM');
  assert.equal(await dev.exited, 0, dev.stderr());
  assert.equal(existsSync(join(cwd, '.factory', 'runtime.json')), false);
  const serve: RunningCli = startCli(['serve', '--port', '0'], { cwd });
  children.push(serve.child);
  await serve.waitFor(() => /admin key: /.test(serve.stdout()), 'the start');
  const url2 = /listening on (http:\/\/\S+)/.exec(serve.stdout())![1];
  assert.doesNotMatch(serve.stdout(), /created now/);

  // The same terminal, no flags: the CLI follows the runtime to its new port.
  assert.equal((await sh.run('factory webhook list')).out.replaceAll(url2, 'URL'), webhooks.replaceAll(url, 'URL'));
  assert.equal((await sh.run('factory run list --json')).out.replaceAll(url2, 'URL'), runs.replaceAll(url, 'URL'));
  assert.equal((await sh.run('factory secret list')).out, secrets);
  const keys = JSON.parse((await sh.run('factory key list --json')).out) as { name: string }[];
  assert.deepEqual(keys.map((k) => k.name).sort(), ['admin', 'ci'], 'no second admin key');
  const replan = await sh.run('factory plan examples/factory --detailed-exitcode');
  assert.equal(replan.code, 0, replan.err);
  // The same token still opens the same webhook, and the same delivery id is now a Duplicate.
  const again = await sh.run(`curl -s -X POST ${url2}/webhooks/w/${CI_UID} -H "Authorization: Bearer $CI_TOKEN" -H 'X-CI-Build-Id: build-42' -d '{}'`);
  assert.equal(again.out, '{"delivery_id":"build-42"}');
  const log = (await sh.run('factory delivery list ci')).out;
  assert.match(log, new RegExp(`Duplicate\\s+\\d+\\s+build-42\\s+-\\n.*Accepted\\s+\\d+\\s+build-42\\s+${runId}\\n`));

  sh.close();
  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0, serve.stderr());
});
