import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { compile, compileDir, DIAGNOSTIC_CODES, locate, loadRepo, writeSnapshot, type Diagnostic, type SourceFile } from '../../../cli/compiler/index.ts';
import { validateSnapshot } from '../../../core/schemas.ts';

const fixture = (name: string) => resolve(import.meta.dirname, '../../fixtures', name);
const brief = (d: Diagnostic) => `${d.file}:${d.line}:${d.column} ${d.severity} ${d.code}`;

const FACTORY = { path: 'factory.yaml', text: 'name: t\n' };
const ENV = { path: 'environments/sandbox.yaml', text: 'agent:\n  command: [agent]\n' };
const UID = 'wh_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const automation = (front: string, body = 'Do it.\n') => `---\n${front}---\n${body}`;
const trigger = (ids: string, payload = '') =>
  `triggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: ${ids}\n${payload}`;

test('every error kind of the broken tree is reported at the offending node', async () => {
  const { diagnostics, snapshot } = await compileDir(fixture('broken'));
  assert.equal(snapshot, undefined);
  assert.deepEqual(diagnostics.map(brief), [
    'automations/dup.md:2:1 error repo.duplicate_name',
    'automations/dup.md:6:28 warning automation.unknown_webhook_uid',
    'automations/dup/automation.md:2:1 error repo.duplicate_name',
    'automations/dup/automation.md:5:12 error automation.unknown_event',
    'automations/dup/automation.md:6:28 warning automation.unknown_webhook_uid',
    'automations/dup/automation.md:6:83 error filter.in_and_not_in',
    'automations/fm.md:2:14 error automation.unknown_environment',
    'automations/fm.md:3:10 error automation.invalid_value',
    'automations/fm.md:5:15 error automation.unknown_provider',
    'automations/fm.md:8:21 error automation.webhook_ids_file_name',
    'automations/fm.md:10:22 error filter.empty_in',
    'automations/fm.md:11:24 error filter.mixed_operators',
    'automations/fm.md:15:20 error automation.webhook_ids_count',
    'automations/fm.md:15:21 warning automation.unknown_webhook_uid',
    'automations/fm.md:15:52 warning automation.unknown_webhook_uid',
    'automations/fm.md:17:1 error automation.empty_prompt',
    'environments/env.yaml:2:12 error environment.invalid_value',
    'environments/env.yaml:3:12 error environment.invalid_value',
    'environments/env.yaml:5:3 error environment.invalid_value',
    'environments/env.yaml:6:7 error environment.invalid_value',
    'factory.yaml:1:7 error factory.invalid_value',
    'factory.yaml:2:1 error factory.unknown_key',
    'webhooks/Bad.yaml:1:1 error file.invalid_name',
    'webhooks/README.txt:1:1 warning file.unexpected',
    'webhooks/gh.yaml:1:11 error webhook.signature_scheme_required',
    'webhooks/gh.yaml:3:19 error webhook.invalid_value',
    'webhooks/tok.yaml:1:1 error webhook.missing_key',
    'webhooks/tok.yaml:2:1 error webhook.signature_scheme_not_allowed',
    'webhooks/tok.yaml:3:1 error webhook.unknown_key',
  ]);
  const byCode = (code: string) => diagnostics.find((d) => d.code === code)!;
  assert.match(byCode('factory.unknown_key').message, /did you mean 'description'/);
  assert.match(byCode('webhook.unknown_key').message, /did you mean 'secretName'/);
  assert.equal(byCode('webhook.unknown_key').pointer, '/secretname');
  assert.equal(byCode('webhook.missing_key').pointer, '/secretName');
  assert.match(byCode('automation.unknown_provider').message, /did you mean 'github'\?/);
  assert.match(byCode('automation.unknown_event').message, /'recieved' is not a webhook event; did you mean 'received'\?/);
  assert.match(byCode('automation.webhook_ids_file_name').message, /factory webhook list/);
  assert.equal(byCode('filter.empty_in').pointer, '/triggers/0/filter/payload/action/in');
  for (const d of diagnostics) assert.ok((DIAGNOSTIC_CODES as readonly string[]).includes(d.code), d.code);
});

test('anchors, aliases, tags, merge keys, complex keys, duplicate keys, extra documents and bad fences each have a code', async () => {
  const { diagnostics } = await compileDir(fixture('yaml-features'));
  assert.deepEqual(diagnostics.map(brief), [
    'automations/alias.md:2:14 error yaml.anchor',
    'automations/alias.md:3:8 error yaml.alias',
    'automations/js.md:1:1 error automation.front_matter_language',
    'automations/open.md:1:1 error automation.unclosed_front_matter',
    'automations/plain.md:1:1 error automation.no_front_matter',
    'webhooks/anchor.yaml:1:13 error yaml.anchor',
    'webhooks/anchor.yaml:2:14 error yaml.alias',
    'webhooks/complexkey.yaml:2:3 error yaml.complex_key',
    'webhooks/dupkey.yaml:2:1 error yaml.duplicate_key',
    'webhooks/merge.yaml:2:1 error yaml.merge_key',
    'webhooks/multi.yaml:2:1 error yaml.multiple_documents',
    'webhooks/nultext.yaml:3:14 error yaml.invalid_text',
    'webhooks/numkey.yaml:4:1 error yaml.complex_key',
    'webhooks/syntax.yaml:2:1 error yaml.syntax',
    'webhooks/tag.yaml:1:13 error yaml.tag',
    'webhooks/textkey.yaml:4:1 error yaml.duplicate_key',
  ]);
  // A key YAML reads as another value than written would become another key: it must be quoted.
  const byFile = (file: string) => diagnostics.find((d) => d.file === file)!.message;
  assert.equal(byFile('webhooks/numkey.yaml'), `the key 1.0 is read as "1"; quote it ('1.0':) to keep it as written`);
  assert.equal(byFile('webhooks/textkey.yaml'), `duplicate key 'true': true and "true" are the same key; each key may appear once`);
  assert.equal(byFile('webhooks/nultext.yaml'), 'this value has a NUL character (U+0000), which no definition can hold: the runtime refuses it in any request');
});

test('anchors and tags on maps and lists have the same codes as on scalars', () => {
  const { diagnostics } = compile([
    FACTORY,
    { path: 'environments/sandbox.yaml', text: 'agent: &a\n  command: [agent]\nenv: !custom\n  FOO: bar\n' },
    { path: 'environments/lists.yaml', text: 'agent:\n  command: &c\n    - agent\n  args: !!seq\n    - x\n' },
    { path: 'webhooks/plain.yaml', text: '!!map\nsecretName: X\n' },
    { path: 'webhooks/flow.yaml', text: 'secretName: s\nheaders: &h {a: b}\n' },
  ]);
  assert.deepEqual(diagnostics.map(brief), [
    'environments/lists.yaml:2:12 error yaml.anchor',
    'environments/lists.yaml:4:9 error yaml.tag',
    'environments/sandbox.yaml:1:8 error yaml.anchor',
    'environments/sandbox.yaml:3:6 error yaml.tag',
    'webhooks/flow.yaml:2:10 error yaml.anchor',
    'webhooks/plain.yaml:1:1 error yaml.tag',
  ]);
  const messages = diagnostics.map((d) => d.message);
  assert.ok(messages.includes('anchors (&a) are not allowed'));
  assert.ok(messages.includes('explicit tags (!custom) are not allowed; write a plain value'));
  assert.ok(messages.includes('explicit tags (!!map) are not allowed; write a plain value'));
});

test('an alias bomb is rejected without being expanded', () => {
  const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 9; i++) lines.push(`${'abcdefghi'[i]}: &${'abcdefghi'[i]} [*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]},*${'abcdefghi'[i - 1]}]`);
  const { diagnostics } = compile([FACTORY, { path: 'webhooks/bomb.yaml', text: lines.join('\n') + '\n' }]);
  assert.ok(diagnostics.some((d) => d.code === 'yaml.alias' && d.line === 2));
  assert.ok(diagnostics.every((d) => d.file !== 'webhooks/bomb.yaml' || d.code.startsWith('yaml.')));
});

test('a file over 1 MiB given to compile is one error', () => {
  const text = 'secretName: x\n' + '# padding\n'.repeat(520_000);
  const { diagnostics } = compile([FACTORY, { path: 'webhooks/big.yaml', text }]);
  assert.deepEqual(diagnostics.map(brief), ['webhooks/big.yaml:1:1 error file.too_large']);
});

test('missing factory.yaml, duplicate pinned uids and too many webhooks', () => {
  const hooks: SourceFile[] = Array.from({ length: 21 }, (_, i) => ({ path: `webhooks/w${String(i).padStart(2, '0')}.yaml`, text: 'secretName: s\n' }));
  hooks[0].text += `uid: ${UID}\n`;
  hooks[1].text += `uid: ${UID}\n`;
  const { diagnostics } = compile(hooks);
  assert.deepEqual(diagnostics.filter((d) => d.severity === 'error').map(brief), [
    'factory.yaml:1:1 error repo.missing_factory_yaml',
    'webhooks/w01.yaml:2:6 error webhook.duplicate_uid',
    'webhooks/w20.yaml:1:1 error repo.too_many_webhooks',
  ]);
});

test('a webhook name in webhook_ids gets the pinned uid as a hint; a repeated UID is a duplicate trigger', () => {
  const { diagnostics } = compile([
    FACTORY,
    ENV,
    { path: 'webhooks/ci.yaml', text: `secretName: s\nuid: ${UID}\n` },
    { path: 'automations/a.md', text: automation(`environment: sandbox\n${trigger('[webhooks/ci.yaml]')}`) },
    {
      path: 'automations/b.md',
      text: automation(`environment: sandbox\n${trigger(`[${UID}]`)}  - provider: webhook\n    event: received\n    filter: {webhook_ids: [${UID}]}\n`),
    },
    { path: 'automations/c.md', text: automation(`environment: sandbox\n${trigger('["not a uid!"]')}`) },
  ]);
  assert.deepEqual(diagnostics.map(brief), [
    'automations/a.md:7:21 error automation.webhook_ids_file_name',
    'automations/b.md:10:28 error automation.duplicate_trigger',
    'automations/c.md:7:21 error automation.webhook_ids_not_uid',
  ]);
  assert.match(diagnostics[0].message, new RegExp(`pins uid ${UID}`));
  // Triggers count from 1, as plan's notes count them: the second trigger repeats the first.
  assert.equal(diagnostics[1].message, `trigger 2 selects webhook ${UID} again (trigger 1 already does); use one trigger per webhook and combine the filters`);
});

test('an operator at the top of a payload filter is a warning: there it names a body field', () => {
  const files = (payload: string) => [
    FACTORY,
    ENV,
    { path: 'webhooks/ci.yaml', text: `secretName: s\nuid: ${UID}\n` },
    { path: 'automations/a.md', text: automation(`environment: sandbox\n${trigger(`[${UID}]`, `      payload:\n${payload}`)}`) },
  ];
  const { diagnostics, snapshot } = compile(files('        exists: true\n        not_in: [x]\n'));
  assert.deepEqual(diagnostics.map(brief), ['automations/a.md:9:9 warning filter.operator_at_top', 'automations/a.md:10:9 warning filter.operator_at_top']);
  assert.equal(diagnostics[0].message, "'exists' at the top of a payload filter is a body field named 'exists', not an operator: operators apply to a field, e.g. action: {exists: true}");
  assert.ok(snapshot, 'a warning only: the filter is valid as written');
  // The same key one level down is the operator, and nothing is said.
  assert.deepEqual(compile(files('        label:\n          exists: true\n')).diagnostics, []);
});

test('the snapshot fills defaults, sorts by name, validates against its schema and resolves ./ repos', () => {
  const files: SourceFile[] = [
    FACTORY,
    { path: 'environments/sandbox.yaml', text: 'agent:\n  command: [agent]\nrepos:\n  - url: ../app\n  - url: https://example.com/x.git\n' },
    { path: 'webhooks/z.yaml', text: 'secretName: s\n' },
    { path: 'webhooks/a.yaml', text: 'authMode: signature\nsignatureScheme: github\nsecretName: s\n' },
    { path: 'automations/x/automation.md', text: automation(`environment: sandbox\n${trigger(`[${UID}]`, '      payload: {created: 2024-01-01}\n')}`, '\n\nPrompt.\r\n\n') },
  ];
  const { snapshot, diagnostics } = compile(files, { root: '/repo/here' });
  assert.deepEqual(diagnostics.map((d) => d.code), ['automation.unknown_webhook_uid']);
  assert.ok(snapshot);
  assert.ok(validateSnapshot(snapshot).ok);
  assert.deepEqual(snapshot.webhooks.map((w) => [w.name, w.authMode]), [['a', 'signature'], ['z', 'token']]);
  const auto = snapshot.automations[0];
  assert.equal(auto.enabled, true);
  assert.equal(auto.prompt, 'Prompt.');
  // Dates stay strings (docs/definitions.md).
  assert.deepEqual(auto.triggers[0].filter.payload, { created: '2024-01-01' });
  const env = snapshot.environments[0];
  assert.deepEqual(env.agent, { command: ['agent'], format: 'text', timeout: '30m' });
  assert.deepEqual(env.repos.map((r) => r.url), ['/repo/app', 'https://example.com/x.git']);
  assert.deepEqual([env.setup, env.env], [[], {}]);
  assert.equal(compile(files).snapshot!.environments[0].repos[0].url, '../app');
});

test('build is deterministic and a changed prompt changes the digest', async () => {
  const files = await loadRepo(resolve(import.meta.dirname, '../../../examples/factory'));
  const a = writeSnapshot(compile(files).snapshot!);
  const b = writeSnapshot(compile([...files].reverse()).snapshot!);
  assert.equal(a, b);
  assert.ok(a.endsWith('}\n'));
  const changed = files.map((f) => (f.path === 'automations/alerts.md' ? { ...f, text: f.text + 'One more line.\n' } : f));
  assert.notEqual(compile(changed).snapshot!.digest, compile(files).snapshot!.digest);
});

test('a checkout with CRLF line ends builds the same definitions as one with LF', async () => {
  const files = await loadRepo(resolve(import.meta.dirname, '../../../examples/factory'));
  const crlf = files.map((f) => ({ ...f, text: f.text.replace(/\r?\n/g, '\r\n') }));
  assert.ok(crlf.some((f) => f.path.endsWith('.md') && f.text.includes('\r\n---\r\n')), 'automations with CRLF front matter');
  const lf = compile(files);
  const got = compile(crlf);
  assert.deepEqual(got.diagnostics.filter((d) => d.severity === 'error'), []);
  // The same snapshot but for the sources' own hashes (their bytes differ) and the digest over them.
  const definitions = (snapshot: object) => {
    const { digest: _digest, sources, ...rest } = JSON.parse(writeSnapshot(snapshot as never)) as Record<string, unknown>;
    return { rest, files: Object.keys(sources as object) };
  };
  assert.deepEqual(definitions(got.snapshot!), definitions(lf.snapshot!));
  // The last value before the closing fence, where the \r used to stay: its position.
  const file = 'automations/alerts.md';
  const pointer = '/triggers/0/filter/payload/labels/severity/1';
  assert.deepEqual(locate(crlf, file, pointer), locate(files, file, pointer));
  assert.deepEqual(locate(crlf, file, pointer), { line: 13, column: 32 });
});

test('locate maps pointers to positions, /prompt to the body, a missing key to its parent', () => {
  const files: SourceFile[] = [
    { path: 'webhooks/a.yaml', text: '# c\nsecretName: s\nauthMode: token\n' },
    { path: 'automations/b.md', text: automation(`environment: sandbox\n${trigger(`[${UID}]`)}`, 'Body\n') },
  ];
  assert.deepEqual(locate(files, 'webhooks/a.yaml', '/authMode'), { line: 3, column: 11 });
  assert.deepEqual(locate(files, 'webhooks/a.yaml', '/nope'), { line: 2, column: 1 });
  assert.deepEqual(locate(files, 'automations/b.md', '/triggers/0/filter/webhook_ids/0'), { line: 7, column: 21 });
  assert.deepEqual(locate(files, 'automations/b.md', '/prompt'), { line: 9, column: 1 });
  assert.deepEqual(locate(files, 'missing.yaml', '/x'), { line: 1, column: 1 });
});

test('a BOM takes no column: a problem on line 1 of a YAML file is at column 1, and the snapshot is the same as without it', () => {
  const withBom = compile([{ path: 'factory.yaml', text: '\ufeffschemaVersio: v1alpha1\nname: x\n' }]);
  assert.deepEqual(withBom.diagnostics.filter((d) => d.code === 'factory.unknown_key').map((d) => [d.line, d.column]), [[1, 1]]);
  const hook = 'secretName: gh\nauthMode: signature\nsignatureScheme: github\n';
  const plain = compile([FACTORY, { path: 'webhooks/gh.yaml', text: hook }]);
  const bom = compile([FACTORY, { path: 'webhooks/gh.yaml', text: '\ufeff' + hook }]);
  assert.deepEqual(bom.diagnostics, plain.diagnostics);
  assert.deepEqual(bom.snapshot?.webhooks, plain.snapshot?.webhooks);
});
