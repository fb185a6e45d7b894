import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTable } from '../../cli/table.ts';

test('columns align on what is shown: a cell with control characters is made visible first', () => {
  assert.equal(formatTable([['RUN', 'TITLE'], ['run_a', 'fix \x1b]0;x\x07 it'], ['run_bb', 'ok']]), 'RUN     TITLE\nrun_a   fix \\x1b]0;x\\x07 it\nrun_bb  ok\n');
});

test("the dashboard shows run text by the CLI's rule: both forms agree on every control character", async () => {
  const { visible: cli } = await import('../../cli/terminal.ts');
  // The dashboard's module is plain JavaScript for the browser; its `visible` touches no DOM.
  const pageModule = new URL('../../runtime/dashboard/transcript.js', import.meta.url).href;
  const { visible: page } = (await import(pageModule)) as { visible: (s: string) => string };
  const samples = ['plain', 'a\x1b[1;31mb\x1b[0m', 'x\r\ny\rz', '\t\n', '\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\', '\u0085\u009b\u00a0é'];
  for (let c = 0; c < 0xa0; c++) samples.push(`<${String.fromCharCode(c)}>`);
  for (const s of samples) assert.equal(page(s), cli(s), JSON.stringify(s));
});
