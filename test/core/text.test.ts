import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ECHO_CHARS, charCount, echoed, titleFromPrompt } from '../../core/text.ts';

test('charCount counts code points: an emoji is one, a lone surrogate is one', () => {
  assert.equal(charCount(''), 0);
  assert.equal(charCount('abc'), 3);
  assert.equal(charCount('🙂'), 1);
  assert.equal(charCount('a🙂b🙂'), 4);
  assert.equal(charCount('\ud800'), 1);
  assert.equal(charCount('\ud800x'), 2);
  assert.equal(charCount('\udc00\ud800'), 2);
  for (const s of ['', 'x', '🙂🙂', 'é\u0301', '\ud83d', 'a\ud83d\ude42\ud83d']) assert.equal(charCount(s), [...s].length, JSON.stringify(s));
});

test('titleFromPrompt: the first line that is not blank, trimmed, cut to 80 characters with an ellipsis', () => {
  assert.equal(titleFromPrompt('Fix it'), 'Fix it');
  assert.equal(titleFromPrompt('\r\n   \n  Fix it  \r\nmore'), 'Fix it');
  assert.equal(titleFromPrompt(''), '');
  assert.equal(titleFromPrompt('x'.repeat(80)), 'x'.repeat(80));
  assert.equal(titleFromPrompt('x'.repeat(81)), 'x'.repeat(79) + '…');
  // Cut by characters, never inside an emoji.
  assert.equal(titleFromPrompt('🙂'.repeat(100)), '🙂'.repeat(79) + '…');
});

test('echoed: an id quoted back is whole up to ECHO_CHARS characters, and cut with an ellipsis beyond', () => {
  assert.equal(echoed('run_abc'), 'run_abc');
  assert.equal(echoed('x'.repeat(ECHO_CHARS)), 'x'.repeat(ECHO_CHARS));
  assert.equal(echoed('x'.repeat(5000)), 'x'.repeat(ECHO_CHARS - 1) + '…');
  // Counted in characters: 200 emoji are whole, and a cut never splits one.
  assert.equal(echoed('😀'.repeat(ECHO_CHARS)), '😀'.repeat(ECHO_CHARS));
  assert.equal(echoed('😀'.repeat(ECHO_CHARS + 1)), '😀'.repeat(ECHO_CHARS - 1) + '…');
});
