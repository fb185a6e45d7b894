import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTable } from '../../cli/table.ts';

test('columns align on what is shown: a cell with control characters is made visible first', () => {
  assert.equal(formatTable([['RUN', 'TITLE'], ['run_a', 'fix \x1b]0;x\x07 it'], ['run_bb', 'ok']]), 'RUN     TITLE\nrun_a   fix \\x1b]0;x\\x07 it\nrun_bb  ok\n');
});
