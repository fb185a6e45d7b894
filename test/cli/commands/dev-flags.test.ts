import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildProgram } from '../../../cli/main.ts';
import { ROOT } from '../../helpers/cli.ts';
import { bufferIO } from '../helpers.ts';

/**
 * docs/plan-apply.md#watch-and-dev lists which `serve` flags `factory dev` takes and which it has
 * not; both lists are the commands' real options, so the page cannot promise a flag dev refuses.
 */
test("the serve flags docs/plan-apply.md says dev takes, and the ones it says dev has not, are the commands' own options", () => {
  const program = buildProgram(bufferIO());
  const longs = (name: string) => program.commands.find((c) => c.name() === name)!.options.map((o) => o.long!).sort();
  const dev = longs('dev');
  const serve = longs('serve');
  const text = readFileSync(join(ROOT, 'docs', 'plan-apply.md'), 'utf8');
  const found = /Of the\s+`serve` flags it takes ([^]*?)\. It has no ([^]*?), which/.exec(text);
  assert.ok(found, 'the sentence that lists the flags');
  const flags = (list: string) => [...list.matchAll(/`(--[a-z-]+)`/g)].map((m) => m[1]).sort();
  assert.deepEqual(flags(found[1]), dev, 'the flags dev takes');
  assert.deepEqual(flags(found[2]), serve.filter((f) => !dev.includes(f)), "the serve flags dev has not");
  assert.deepEqual(dev.filter((f) => !serve.includes(f)), [], 'dev has no flag of its own');
});
