import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compile } from '../../../cli/compiler/compile.ts';
import { validateSnapshot } from '../../../core/schemas.ts';

/** An environment's `network` (docs/security.md#network): none or open, kept in the snapshot only when set. */
function build(network?: string) {
  return compile([
    { path: 'factory.yaml', text: 'name: x\n' },
    { path: 'environments/e.yaml', text: `agent:\n  command: [a]\n${network ? `network: ${network}\n` : ''}` },
  ]);
}

test('network: open and none reach the snapshot; absent stays absent (the runtime reads it as none, and old digests hold)', () => {
  for (const value of ['open', 'none'] as const) {
    const { snapshot, diagnostics } = build(value);
    assert.deepEqual(diagnostics, []);
    assert.equal(snapshot!.environments[0].network, value);
    assert.ok(validateSnapshot(snapshot).ok);
  }
  const { snapshot } = build();
  assert.equal('network' in snapshot!.environments[0], false);
  assert.ok(validateSnapshot(snapshot).ok);
});

test('any other network value is an error at its position', () => {
  const { snapshot, diagnostics } = build('offline');
  assert.equal(snapshot, undefined);
  assert.deepEqual(
    diagnostics.map((d) => [d.file, d.line, d.column, d.code, d.message]),
    [['environments/e.yaml', 3, 10, 'environment.invalid_value', "/network must be one of 'none', 'open', got 'offline'"]],
  );
});
