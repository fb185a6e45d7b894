import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS_DIR, POSTGRES_MIGRATIONS_DIR } from '../../../runtime/store/db.ts';

/**
 * A released migration never changes (docs/deploy.md#migrations): the runner records versions, not
 * contents, so a database that applied the old text would never get what was added to it. A change
 * belongs in a new migration. Each file's SHA-256 (first 16 hex digits) is pinned here; a new
 * migration adds its line.
 */
const RELEASED: Record<string, string> = {
  '001-core.sql': 'c162bd47dfc36fa9',
  '002-definitions.sql': '40980b9d013a3607',
  '003-runs.sql': '928bfd1887aacbe4',
  '004-deliveries.sql': '847a43f2cd895aa0',
  '005-runs-by-delivery.sql': '539df008a583b618',
  '006-run-process.sql': 'dc3653a3a320b7ca',
  '007-secret-owners.sql': '841d8920052efbdd',
  '008-delivery-log-upkeep.sql': 'a75ac4f212d27e86',
  '009-run-oz-fields.sql': '6f113775292354cd',
  '010-secret-grace.sql': '51f4f0133eda1168',
  '011-run-retry-replay-notify.sql': '7595d7790b2455e8',
  '012-schedule-pause.sql': 'a1735c7635a9f87e',
  '013-run-leases.sql': '1c37bc4a23a0cbf1',
  '014-rate-windows.sql': '3ac4214d5610dec9',
  '015-payload-in-entry.sql': 'ea76de382019ec1b',
  '016-runs-by-entry.sql': 'ebb5454462ff59bb',
  '017-attachment-in-entry.sql': 'dc66876bee1e97e0',
  '018-worker-reports.sql': '282302e62fe1f6ae',
  '019-runs-by-schedule.sql': '3897d0ea28a08990',
  '020-claims-in-arrival-order.sql': '930cb33982b204cd',
  '021-checks-as-comparisons.sql': '1d6d9ccf512b1766',
  '022-claim-hash-halfsiphash.sql': '0b449ecf245a76ae',
  '023-run-owner.sql': '8ba57ce946467238',
  '024-runs-queued-by-owner.sql': '37b83cd0a8d14e57',
  '025-rate-windows-unlogged.sql': '9689c6eab24e8ed9',
  'postgres/001-core.sql': '323898ced5da0b65',
  'postgres/002-definitions.sql': 'ef6fed01167790c0',
  'postgres/003-runs.sql': 'fd188ae5826e1f5e',
  'postgres/004-deliveries.sql': 'fc7a3b240c1306b7',
  'postgres/005-runs-by-delivery.sql': 'c2b8d531187502fe',
  'postgres/006-run-process.sql': '246e5359328509c7',
  'postgres/007-secret-owners.sql': 'e3deb2668b9f59bf',
  'postgres/008-delivery-log-upkeep.sql': '2a17591a1fd22b5c',
  'postgres/009-run-oz-fields.sql': '0f5fb0a4921808ec',
  'postgres/010-secret-grace.sql': '6d037cf0b1ace4ef',
  'postgres/011-run-retry-replay-notify.sql': 'c660b2d004a27761',
  'postgres/012-schedule-pause.sql': '3ae7571d2196a063',
  'postgres/013-run-leases.sql': '5d5ed38ba114ec30',
  'postgres/014-rate-windows.sql': '63e12927337511ee',
  'postgres/015-payload-in-entry.sql': '90e487033de6da3d',
  'postgres/016-runs-by-entry.sql': 'def4b5ee4ee8e1d2',
  'postgres/017-attachment-in-entry.sql': 'ace799a0decbc800',
  'postgres/018-worker-reports.sql': '93baa098fb92d0f5',
  'postgres/019-runs-by-schedule.sql': '4bdc06898b434ebe',
  'postgres/020-claims-in-arrival-order.sql': '3b2947e3aadfe1f9',
  'postgres/021-checks-as-comparisons.sql': '350f1a237c73df59',
  'postgres/022-claim-hash-halfsiphash.sql': '29202bbee60c22b0',
  'postgres/023-run-owner.sql': '9a04581d4b28350c',
  'postgres/024-runs-queued-by-owner.sql': 'abae88216a4ccab6',
  'postgres/025-rate-windows-unlogged.sql': '7ecac09bf1afaeb1',
};

test('every migration file is one of the released ones, unchanged', () => {
  const files = [
    ...readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).map((f) => [f, join(MIGRATIONS_DIR, f)]),
    ...readdirSync(POSTGRES_MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).map((f) => [`postgres/${f}`, join(POSTGRES_MIGRATIONS_DIR, f)]),
  ];
  for (const [name, path] of files) {
    const hash = createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16);
    assert.ok(name in RELEASED, `${name} is new: add '${name}': '${hash}' to RELEASED once it is final`);
    assert.equal(hash, RELEASED[name], `${name} changed after it was released; put the change in a new migration instead`);
  }
  assert.equal(files.length, Object.keys(RELEASED).length, 'a released migration file is gone');
});
