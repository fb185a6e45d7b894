import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkAgainstRuntime, checkSnapshot, isUrlSafeToken } from '../../../runtime/definitions/checks.ts';
import { automation, emptyInput, environment, snapshot, webhook, UID_A, UID_B } from './fixture.ts';
import type { WebhookRecord } from '../../../runtime/definitions/state.ts';

const codes = (errors: { code: string }[]) => errors.map((e) => e.code);

function record(extra: Partial<WebhookRecord> = {}): WebhookRecord {
  return {
    uid: UID_A, factory: 'demo', name: 'ci', authMode: 'token', signatureScheme: null, secretName: 'ci-secret', secretVersion: 1,
    deliveryIdHeader: null, description: null, enabled: true, managedBy: 'definitions', sourceFile: 'webhooks/ci.yaml',
    createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', deletedAt: null, ...extra,
  };
}

test('isUrlSafeToken: RFC 3986 unreserved characters, at least 32', () => {
  assert.equal(isUrlSafeToken('a'.repeat(32)), true);
  assert.equal(isUrlSafeToken('A-z0_9.~'.repeat(4)), true);
  assert.equal(isUrlSafeToken('a'.repeat(31)), false);
  assert.equal(isUrlSafeToken('a'.repeat(31) + '/'), false);
  assert.equal(isUrlSafeToken('a'.repeat(31) + '+'), false);
  assert.equal(isUrlSafeToken('a'.repeat(31) + '='), false);
  assert.equal(isUrlSafeToken('a'.repeat(40) + ' '), false);
});

test('checkSnapshot accepts a valid snapshot for the factory in the URL', () => {
  const result = checkSnapshot(snapshot(), 'demo');
  assert.equal(result.ok, true);
});

test('checkSnapshot maps schema errors to the resource file and key', () => {
  const s = snapshot();
  (s.webhooks[0] as unknown as Record<string, unknown>).secretName = 'bad name!';
  const result = checkSnapshot(s, 'demo');
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.deepEqual(result.errors.map((e) => [e.file, e.pointer, e.code]), [['webhooks/ci.yaml', '/secretName', 'snapshot.invalid']]);
});

test('checkSnapshot refuses a wrong digest and a factory name that is not the URL one', () => {
  const s = snapshot();
  s.webhooks[0].description = 'edited after build';
  const result = checkSnapshot(s, 'other');
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.deepEqual(codes(result.errors), ['snapshot.digest_mismatch', 'factory.name_mismatch']);
  assert.equal(result.errors[1].file, 'factory.yaml');
});

test('checkSnapshot applies the filter grammar: an unknown operator or one beside body keys is refused, at the trigger', () => {
  const withFilter = (payload: Record<string, unknown>) =>
    snapshot({ automations: [automation('triage', UID_A, { triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [UID_A], payload: payload as never } }] })] });
  for (const payload of [{ action: { in: ['opened'], bogus: 'x' } }, { sender: { login: { nin: ['bot'] } } }]) {
    const result = checkSnapshot(withFilter(payload), 'demo');
    assert.equal(result.ok, false, JSON.stringify(payload));
    if (result.ok) return;
    assert.ok(result.errors.every((e) => e.file === 'automations/triage.md' && e.pointer.startsWith('/triggers/0/filter/payload/') && e.code.startsWith('filter.')), JSON.stringify(result.errors));
  }
  assert.equal(checkSnapshot(withFilter({ action: { in: ['opened', 'reopened'] } }), 'demo').ok, true);
});

test('checkSnapshot refuses a non-object', () => {
  assert.equal(checkSnapshot(null, 'demo').ok, false);
  assert.equal(checkSnapshot([], 'demo').ok, false);
});

test('runtime checks pass on a fresh runtime with the secret present', () => {
  assert.deepEqual(checkAgainstRuntime(snapshot(), emptyInput()), []);
});

test('a missing secret names the webhook file and /secretName', () => {
  const errors = checkAgainstRuntime(snapshot(), emptyInput({}));
  assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code]), [['webhooks/ci.yaml', '/secretName', 'secret.not_found']]);
});

test('a pending secret is an error for token and url_token, allowed for signature', () => {
  const pending = emptyInput({ 'ci-secret': { version: null } });
  assert.deepEqual(codes(checkAgainstRuntime(snapshot(), pending)), ['secret.pending']);
  const url = snapshot({ webhooks: [webhook('ci', { authMode: 'url_token', uid: UID_A })] });
  assert.deepEqual(codes(checkAgainstRuntime(url, pending)), ['secret.pending']);
  const sig = snapshot({ webhooks: [webhook('ci', { authMode: 'signature', signatureScheme: 'github', uid: UID_A })] });
  assert.deepEqual(checkAgainstRuntime(sig, pending), []);
});

test('a url_token secret that is not URL-safe is an error; token mode does not care', () => {
  const input = emptyInput({ 'ci-secret': { version: 2, urlSafe: false } });
  const url = snapshot({ webhooks: [webhook('ci', { authMode: 'url_token', uid: UID_A })] });
  assert.deepEqual(codes(checkAgainstRuntime(url, input)), ['secret.not_url_safe']);
  assert.deepEqual(checkAgainstRuntime(snapshot(), input), []);
});

test('a standard-webhooks secret that is no signing key is an error; other schemes do not care', () => {
  const input = emptyInput({ 'ci-secret': { version: 2, signingKey: false } });
  const sw = snapshot({ webhooks: [webhook('ci', { authMode: 'signature', signatureScheme: 'standard-webhooks', uid: UID_A })] });
  assert.deepEqual(codes(checkAgainstRuntime(sw, input)), ['secret.not_signing_key']);
  const gh = snapshot({ webhooks: [webhook('ci', { authMode: 'signature', signatureScheme: 'github', uid: UID_A })] });
  assert.deepEqual(checkAgainstRuntime(gh, input), []);
  assert.deepEqual(checkAgainstRuntime(sw, emptyInput({ 'ci-secret': { version: 2, signingKey: true } })), []);
});

test('a pinned UID held by another webhook, live or deleted, is a conflict', () => {
  for (const holder of [record({ factory: 'other', name: 'x' }), record({ name: 'old', deletedAt: '2026-01-02T00:00:00.000Z' })]) {
    const input = emptyInput();
    input.pinnedUidHolders.set(UID_A, holder);
    const errors = checkAgainstRuntime(snapshot(), input);
    assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code, e.conflict]), [['webhooks/ci.yaml', '/uid', 'webhook.uid_taken', true]]);
  }
});

test('the uid_taken sentence says which webhook holds the UID, deleted or not, in words', () => {
  const message = (holder: ReturnType<typeof record>, mayName: boolean) => {
    const input = emptyInput();
    input.pinnedUidHolders.set(UID_A, holder);
    return checkAgainstRuntime(snapshot(), input, { mayName: () => mayName })[0].message;
  };
  const gone = { deletedAt: '2026-01-02T00:00:00.000Z' };
  assert.equal(message(record({ factory: 'other', name: 'x', ...gone }), false), `uid ${UID_A} belongs to a deleted webhook of another factory; a UID is never reused`);
  assert.equal(message(record({ factory: 'other', name: 'x' }), false), `uid ${UID_A} belongs to a webhook of another factory; a UID is never reused`);
  assert.equal(message(record({ factory: 'other', name: 'x', ...gone }), true), `uid ${UID_A} belongs to deleted webhook 'x' of factory 'other'; a UID is never reused`);
  assert.equal(message(record({ name: 'old', ...gone }), true), `uid ${UID_A} belongs to deleted webhook 'old'; a UID is never reused`);
});

test('the same webhook keeping its pinned UID is fine; changing it is a conflict', () => {
  const input = emptyInput();
  input.webhooks = [record()];
  input.pinnedUidHolders.set(UID_A, record());
  assert.deepEqual(checkAgainstRuntime(snapshot(), input), []);
  const moved = snapshot({ webhooks: [webhook('ci', { uid: UID_B })] });
  assert.deepEqual(codes(checkAgainstRuntime(moved, input)), ['webhook.uid_changed']);
});

test('an environment owned by another factory is a conflict naming the owner', () => {
  const input = emptyInput();
  input.environmentOwners.set('sandbox', 'payments');
  const errors = checkAgainstRuntime(snapshot(), input);
  assert.deepEqual(errors.map((e) => [e.file, e.code]), [['environments/sandbox.yaml', 'environment.owned']]);
  assert.match(errors[0].message, /payments/);
});

test('an environment {secret} that does not exist names /env/KEY/secret', () => {
  const s = snapshot({ environments: [environment('sandbox', { env: { TOKEN: { secret: 'gh-token' }, PLAIN: 'x' } })] });
  const errors = checkAgainstRuntime(s, emptyInput());
  assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code]), [['environments/sandbox.yaml', '/env/TOKEN/secret', 'secret.not_found']]);
});

test('a snapshot from elsewhere gets the compiler\'s environment rules: a timeout past a week, a repo path outside the workspace', () => {
  const s = snapshot({
    environments: [
      environment('sandbox', { agent: { command: ['echo'], format: 'text', timeout: '600h' }, repos: [{ url: 'https://github.com/acme/app.git', path: '../escape' }] }),
      environment('fine', { agent: { command: ['echo'], format: 'text', timeout: '168h' }, repos: [{ url: 'https://github.com/acme/app.git', path: 'app' }] }),
    ],
  });
  const errors = checkAgainstRuntime(s, emptyInput());
  assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code]), [
    ['environments/sandbox.yaml', '/repos/0/path', 'environment.invalid_value'],
    ['environments/sandbox.yaml', '/agent/timeout', 'environment.invalid_value'],
  ]);
});

test('more than 20 webhooks is an error naming each extra file', () => {
  const hooks = Array.from({ length: 21 }, (_, i) => webhook(`h${String(i).padStart(2, '0')}`, { secretName: 'ci-secret' }));
  const errors = checkAgainstRuntime(snapshot({ webhooks: hooks, automations: [] }), emptyInput());
  assert.deepEqual(errors.map((e) => [e.file, e.code]), [['webhooks/h20.yaml', 'webhook.limit_exceeded']]);
});

test('a factory created through the API cannot be applied', () => {
  const input = emptyInput();
  input.factory = { name: 'demo', managedBy: 'api', description: null, revision: null, generation: 0, digest: null, appliedAt: null, createdAt: 'x' };
  assert.deepEqual(codes(checkAgainstRuntime(snapshot(), input)), ['factory.managed_by_api']);
});

test('an automation may only use an environment of its own snapshot: unknown, another factory\'s, or one this apply deletes', () => {
  const s = snapshot({ environments: [] });
  const unknown = checkAgainstRuntime(s, emptyInput());
  assert.deepEqual(unknown.map((e) => [e.file, e.pointer, e.code]), [['automations/triage.md', '/environment', 'environment.not_found']]);

  const foreign = emptyInput();
  foreign.environmentOwners.set('sandbox', 'shared');
  const errors = checkAgainstRuntime(s, foreign);
  assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code, e.conflict]), [['automations/triage.md', '/environment', 'environment.not_owned', true]]);
  assert.match(errors[0].message, /belongs to factory 'shared'/);

  // Owned by this factory today, but left out of the snapshot: the apply would delete it.
  const own = emptyInput();
  own.environmentOwners.set('sandbox', 'demo');
  const dropped = checkAgainstRuntime(s, own);
  assert.deepEqual(codes(dropped), ['environment.not_found']);
  assert.match(dropped[0].message, /would delete it/);

  assert.deepEqual(checkAgainstRuntime(snapshot(), own), [], 'defined in the snapshot: fine');
});

test('a secret limited to other factories is refused where it is bound, and judged no further', () => {
  const s = snapshot({
    webhooks: [webhook('ci', { authMode: 'url_token', uid: UID_A })],
    environments: [environment('sandbox', { env: { TOKEN: { secret: 'gh-token' } } })],
  });
  const input = emptyInput({
    'ci-secret': { version: 1, urlSafe: false, factories: ['payments'] },
    'gh-token': { version: 3, factories: ['payments', 'shop'] },
  });
  const errors = checkAgainstRuntime(s, input);
  assert.deepEqual(errors.map((e) => [e.file, e.pointer, e.code, e.conflict]), [
    ['webhooks/ci.yaml', '/secretName', 'secret.not_allowed', true],
    ['environments/sandbox.yaml', '/env/TOKEN/secret', 'secret.not_allowed', true],
  ]);
  assert.match(errors[0].message, /team secret 'ci-secret' may not be used by factory 'demo'; .*factory secret grant ci-secret --factory demo/);
  assert.ok(!errors.some((e) => /payments|shop/.test(e.message)), 'the other factories are not named');

  const allowed = emptyInput({ 'ci-secret': { version: 1, factories: ['demo'] }, 'gh-token': { version: 3, factories: null } });
  assert.deepEqual(checkAgainstRuntime(s, allowed), []);
});
