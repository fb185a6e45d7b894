import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { runCli } from '../../../cli/main.ts';
import type { CliIO } from '../../../cli/io.ts';
import { compile } from '../../../cli/compiler/index.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';

/**
 * docs/definitions.md: a `webhook_ids` item that looks like a webhook name is an error whose hint
 * gives that webhook's UID when the runtime is reachable (plan/apply), and `factory webhook list`
 * otherwise.
 */

const PINNED = 'wh_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const automation = (id: string) =>
  `---\nenvironment: box\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${id}]\n---\nHandle it.\n`;

test('compile: the pinned UID first, then the runtime UID, then the runtime saying it has none, then the offline hint', () => {
  const files = (id: string, pin = false) => [
    { path: 'factory.yaml', text: 'name: f\n' },
    { path: 'environments/box.yaml', text: 'agent: {command: [a]}\n' },
    { path: 'webhooks/ci.yaml', text: `secretName: s\n${pin ? `uid: ${PINNED}\n` : ''}` },
    { path: 'automations/a.md', text: automation(id) },
  ];
  const message = (id: string, pin: boolean, runtime?: Map<string, string>) => {
    const d = compile(files(id, pin), { runtimeWebhooks: runtime }).diagnostics.filter((x) => x.code === 'automation.webhook_ids_file_name');
    assert.equal(d.length, 1);
    assert.deepEqual([d[0].line, d[0].column], [7, 21]);
    return d[0].message;
  };
  const runtime = new Map([['ci', 'wh_bbbbbbbbbbbbbbbbbbbbbbbbbb']]);
  assert.match(message('ci', true, runtime), new RegExp(`webhook 'ci' pins uid ${PINNED} in this repo: use \\[${PINNED}\\]`));
  assert.match(message('webhooks/ci.yaml', false, runtime), /the runtime knows webhook 'ci' of this factory as wh_b{26}: use \[wh_b{26}\]$/);
  assert.match(message('ci', false, new Map()), /the runtime has no webhook 'ci' in this factory yet/);
  assert.match(message('ci', false), /`factory webhook list` shows the UIDs/);
});

test('plan and apply against a real runtime give the UID it assigned; an unreachable runtime leaves the offline hint', async () => {
  const rt = await startTestRuntime();
  const dir = mkdtempSync(join(tmpdir(), 'factory-ids-hint-'));
  const cli = async (args: string[], server = rt.url) => {
    let out = '';
    let err = '';
    const io: CliIO = {
      stdout: (s) => void (out += s),
      stderr: (s) => void (err += s),
      env: { FACTORY_SERVER: server, FACTORY_API_KEY: rt.adminKey, NO_COLOR: '1' },
      cwd: dir,
      stdin: Readable.from([]),
      stdinIsTTY: false,
      stdoutIsTTY: false,
    };
    return { code: await runCli(args, io), out, err };
  };
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, 'repo', path)), { recursive: true });
    writeFileSync(join(dir, 'repo', path), text);
  };
  try {
    rt.store.secrets.create('s', 's'.repeat(40));
    write('factory.yaml', 'name: f\n');
    write('webhooks/ci.yaml', 'secretName: s\n');
    write('environments/box.yaml', 'agent: {command: [a]}\n');
    const applied = await cli(['apply', 'repo']);
    assert.equal(applied.code, 0, applied.err);
    const uid = rt.store.defs.listWebhooks('f')[0].uid;

    write('automations/a.md', automation('ci'));
    for (const command of ['plan', 'apply']) {
      const r = await cli([command, 'repo']);
      assert.equal(r.code, 1, r.err);
      assert.equal(r.out, '');
      assert.equal(
        r.err,
        `repo/automations/a.md:7:21: error automation.webhook_ids_file_name: 'ci' looks like a webhook name, but webhook_ids takes a UID (wh_...); the runtime knows webhook 'ci' of this factory as ${uid}: use [${uid}]\n`,
        command,
      );
    }
    assert.equal(rt.store.defs.listAutomations().length, 0, 'nothing applied');

    const offline = await cli(['plan', 'repo'], 'http://127.0.0.1:1');
    assert.equal(offline.code, 1);
    assert.match(offline.err, /^repo\/automations\/a\.md:7:21: error automation\.webhook_ids_file_name: .*`factory webhook list` shows the UIDs/);
    assert.equal(offline.err.trimEnd().split('\n').length, 1, 'the same one diagnostic, no second error about the runtime');

    // With the hint's UID the automation applies.
    write('automations/a.md', automation(uid));
    const fixed = await cli(['apply', 'repo']);
    assert.equal(fixed.code, 0, fixed.err);
    assert.deepEqual(rt.store.defs.listAutomations().map((a) => a.name), ['a']);
  } finally {
    await rt.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
