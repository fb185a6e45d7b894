import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatEvent, type TranscriptEvent } from '../../cli/commands/run.ts';
import { visible } from '../../cli/terminal.ts';

/** What a run printed is shown without driving the terminal (README.md#commands). */

const ev = (type: string, data: Record<string, unknown>): TranscriptEvent => ({ seq: 1, time: '2026-01-01T00:00:00Z', type, data }) as TranscriptEvent;

test('what the run printed cannot drive the terminal: colour is dropped, other control characters are shown', () => {
  const hostile = 'a\x1b[31mred\x1b[0m b\x1b]0;pwned title\x07 c\x1b]52;c;ZXZpbA==\x07 d\r\ne\rf\u009b2J g\x7f\tend\n';
  const shown = formatEvent(ev('output', { stream: 'stdout', text: hostile }));
  assert.equal(shown, 'ared b\\x1b]0;pwned title\\x07 c\\x1b]52;c;ZXZpbA==\\x07 d\ne\\x0df\\x9b2J g\\x7f\tend\n');
  // eslint-disable-next-line no-control-regex
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(shown));
  assert.equal(formatEvent(ev('state', { to: 'FAILED', status_message: 'x\x1b[2Ky' })), '-- FAILED: x\\x1b[2Ky\n');
});

test("the dashboard shows run text by the CLI's rule: both forms agree on every control character", async () => {
  // The dashboard's module is plain JavaScript for the browser; its `visible` touches no DOM.
  const pageModule = new URL('../../runtime/dashboard/transcript.js', import.meta.url).href;
  const { visible: page } = (await import(pageModule)) as { visible: (s: string) => string };
  const samples = ['plain', 'a\x1b[1;31mb\x1b[0m', 'x\r\ny\rz', '\t\n', '\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\', '\u0085\u009b\u00a0é'];
  for (let c = 0; c < 0xa0; c++) samples.push(`<${String.fromCharCode(c)}>`);
  for (const s of samples) assert.equal(page(s), visible(s), JSON.stringify(s));
});
