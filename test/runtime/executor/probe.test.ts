/**
 * The sandbox's start-up probe without blocking (`probeIsolationAsync`, which `factory serve`
 * starts while the runtime loads) gives the same verdict as the blocking one, for a bubblewrap that
 * works, one that is missing, and stand-ins that fail the ways the verdicts name.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../runtime/config.ts';
import { findProgram, isolationOf, probeIsolation, probeIsolationAsync } from '../../../runtime/executor/sandbox.ts';
import { sandboxSkip } from './helpers.ts';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-probe-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A stand-in for bwrap that prints `message` to stderr and exits 1. */
function failingBwrap(dir: string, name: string, message: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\necho '${message}' >&2\nexit 1\n`);
  chmodSync(file, 0o755);
  return file;
}

/** Two isolations that differ only in their data dir, so each form of the probe runs its own bubblewrap. */
function twoIsolations(dir: string, bwrap: string | undefined) {
  const env = bwrap ? { FACTORY_BWRAP: bwrap } : {};
  return [1, 2].map((n) => isolationOf(parseConfig({ dataDir: path.join(dir, `data-${n}`), executor: 'sandbox' }, env)));
}

test('the probe without blocking agrees with the blocking one, verdict for verdict', { skip: sandboxSkip() || false }, async (t) => {
  const dir = tempDir(t);
  const cases: [string, string | undefined, RegExp | undefined][] = [
    ['a working bubblewrap', undefined, undefined],
    ['a missing one', path.join(dir, 'no-such-bwrap'), /^bubblewrap \(.*no-such-bwrap\) was not found$/],
    ['one too old for the options', failingBwrap(dir, 'old-bwrap', 'bwrap: Unknown option --die-with-parent'), /is too old for the sandbox's options \(bwrap: Unknown option --die-with-parent\)$/],
    ['one whose limits fail', failingBwrap(dir, 'limits-bwrap', 'prlimit: failed to set the NPROC resource limit'), /^the sandbox's limits cannot be set here \(prlimit: failed/],
    ['one that cannot create its sandbox', failingBwrap(dir, 'no-ns-bwrap', 'bwrap: No permissions to creating new namespace'), /cannot create its sandbox here \(bwrap: No permissions/],
    // bubblewrap's own words when the kernel refuses the filter (CONFIG_SECCOMP_FILTER off).
    [
      'one that cannot install the filter',
      failingBwrap(dir, 'no-seccomp-bwrap', 'bwrap: Unable to set up system call filtering as requested: prctl(PR_SET_SECCOMP) reported EINVAL.'),
      /cannot install the sandbox's system-call filter here \(bwrap: Unable to set up system call filtering/,
    ],
  ];
  for (const [what, bwrap, expected] of cases) {
    const [first, second] = twoIsolations(path.join(dir, what.replace(/ /g, '-')), bwrap);
    const pending = probeIsolationAsync(first);
    assert.ok(pending instanceof Promise, what);
    const async = await pending;
    const sync = probeIsolation(second);
    assert.deepEqual(async, sync, what);
    if (expected) assert.match(async?.what ?? '(none)', expected, what);
    else assert.equal(async, undefined, what);
    // Asked again, either form answers from the first verdict.
    assert.deepEqual(probeIsolation(first), async, what);
    assert.deepEqual(await probeIsolationAsync(second), sync, what);
  }
});

test("bwrap without a slash is looked up on the runtime's PATH first, then in the system directories; one found nowhere is named with where it was looked for", (t) => {
  const dir = tempDir(t);
  mkdirSync(path.join(dir, 'bin'));
  // A stand-in on the runtime's PATH, ahead of any system bwrap.
  const mine = failingBwrap(path.join(dir, 'bin'), 'bwrap', 'bwrap: No permissions to creating new namespace');
  const iso = (env: Record<string, string>) => isolationOf(parseConfig({ dataDir: path.join(dir, 'data'), executor: 'sandbox' }, env));
  assert.equal(iso({ PATH: `relative/bin:${path.join(dir, 'bin')}:/usr/bin` }).sandbox.bwrap, mine);
  assert.equal(probeIsolation(iso({ PATH: path.join(dir, 'bin') }))?.what, `bubblewrap (${mine}) cannot create its sandbox here (bwrap: No permissions to creating new namespace)`);
  // Not on PATH: the system directories still count; a name found nowhere stays as given.
  assert.equal(findProgram('factory-no-such-program', path.join(dir, 'bin')), 'factory-no-such-program');
  assert.equal(findProgram('sh', path.join(dir, 'bin')), existsSync('/usr/bin/sh') ? '/usr/bin/sh' : '/bin/sh');
  const missing = probeIsolation(isolationOf(parseConfig({ dataDir: path.join(dir, 'data2'), executor: 'sandbox' }, { PATH: path.join(dir, 'bin'), FACTORY_BWRAP: 'factory-no-such-bwrap' })));
  assert.equal(missing?.what, 'bubblewrap (factory-no-such-bwrap) was not found on PATH or in /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin');
});
