import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBuffered } from '../helpers.ts';

// A pull_request.labeled body, trimmed from the octokit/webhooks examples (MIT).
const PR_LABELED = JSON.stringify({
  action: 'labeled',
  pull_request: { base: { ref: 'master' }, labels: [{ name: 'bug' }], draft: false },
});

describe('factory filter test', () => {
  let dir: string;
  const run = (...args: string[]) => runBuffered(['filter', 'test', ...args], {}, { cwd: dir });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'factory-filter-'));
    await writeFile(join(dir, 'pr.json'), PR_LABELED);
    await writeFile(join(dir, 'labeled.yaml'), 'action: labeled\npull_request:\n  labels:\n    name: [bug, urgent]\n');
    await writeFile(join(dir, 'opened.yaml'), '# only new pull requests\naction: [opened, reopened]\n');
    await writeFile(join(dir, 'labels.json'), '{"pull_request": {"labels": {"name": "urgent"}}}');
    await writeFile(join(dir, 'dotted.yaml'), '"a.b": {exists: true}\n');
    await writeFile(join(dir, 'bad-grammar.yaml'), 'action: []\nref:\n  in: [main]\n  branch: x\nx:\n  exists: "yes"\n');
    await writeFile(join(dir, 'not-object.yaml'), '- action\n');
    await writeFile(join(dir, 'alias.yaml'), 'a: &x [1]\nb: *x\n');
    await writeFile(join(dir, 'bad.json'), '{"a": ');
    // V8 quotes the text it could not parse into its message, line breaks and all.
    await writeFile(join(dir, 'words.json'), 'not json\nbut two lines of words\n');
    await writeFile(join(dir, 'not-utf8.json'), Buffer.from([0x7b, 0xff, 0x7d]));
    await writeFile(join(dir, 'bom.json'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"action":"opened"}')]));
    await writeFile(join(dir, 'proto.yaml'), '__proto__: {exists: true}\n');
    await writeFile(join(dir, 'proto-payload.json'), '{"__proto__": 1}');
    await writeFile(join(dir, 'scalar.json'), '"just a string"');
    await writeFile(join(dir, 'not-in.yaml'), 'ref: {not_in: [main]}\n');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints matches and exits 0', async () => {
    assert.deepEqual(await run('labeled.yaml', 'pr.json'), { code: 0, out: 'matches\n', err: '' });
  });

  it('prints the key path and reason and exits 1 when it does not match', async () => {
    assert.deepEqual(await run('opened.yaml', 'pr.json'), {
      code: 1,
      out: 'does not match: action: "labeled" is not one of "opened", "reopened"\n',
      err: '',
    });
    assert.deepEqual(await run('labels.json', 'pr.json'), {
      code: 1,
      out: 'does not match: pull_request.labels[].name: "bug" is not "urgent"\n',
      err: '',
    });
    assert.deepEqual(await run('dotted.yaml', 'pr.json'), { code: 1, out: 'does not match: "a.b": missing (expected it to exist)\n', err: '' });
  });

  it('--json prints {matches, path?, reason?}', async () => {
    const hit = await run('labeled.yaml', 'pr.json', '--json');
    assert.equal(hit.code, 0);
    assert.deepEqual(JSON.parse(hit.out), { matches: true });
    const miss = await run('opened.yaml', 'pr.json', '--json');
    assert.equal(miss.code, 1);
    assert.deepEqual(JSON.parse(miss.out), { matches: false, path: ['action'], reason: '"labeled" is not one of "opened", "reopened"' });
  });

  it('YAML __proto__ is an ordinary key, in the filter and in the payload', async () => {
    assert.equal((await run('proto.yaml', 'proto-payload.json')).code, 0);
    assert.equal((await run('proto.yaml', 'pr.json')).code, 1);
  });

  it('a body that is not an object: not_in matches, others do not', async () => {
    assert.equal((await run('not-in.yaml', 'scalar.json')).code, 0);
    assert.deepEqual(await run('opened.yaml', 'scalar.json'), {
      code: 1,
      out: 'does not match: action: missing: the body is a string, not an object\n',
      err: '',
    });
  });

  it('prints every grammar problem with pointer and code, exit 1', async () => {
    const r = await run('bad-grammar.yaml', 'pr.json');
    assert.equal(r.code, 1);
    const lines = r.out.trim().split('\n');
    assert.deepEqual(
      lines.map((l) => l.split(': ').slice(0, 3).join(': ')),
      ['bad-grammar.yaml: /action: filter.empty_in', 'bad-grammar.yaml: /ref/branch: filter.mixed_operators', 'bad-grammar.yaml: /x/exists: filter.invalid_exists'],
    );
    assert.equal(r.err, '');
    const json = await run('bad-grammar.yaml', 'pr.json', '--json');
    assert.equal(json.code, 1);
    assert.deepEqual(
      (JSON.parse(json.out) as { problems: { pointer: string; code: string }[] }).problems.map((p) => p.code),
      ['filter.empty_in', 'filter.mixed_operators', 'filter.invalid_exists'],
    );
  });

  it('a filter file that is not an object is a grammar problem', async () => {
    const r = await run('not-object.yaml', 'pr.json');
    assert.equal(r.code, 1);
    assert.match(r.out, /^not-object\.yaml: \(root\): filter\.not_object: .*got an array \["action"\]\n$/);
  });

  it('bad files: one clear sentence on stderr, exit 1', async () => {
    const cases: [string[], RegExp][] = [
      [['missing.yaml', 'pr.json'], /^error: cannot read the filter file missing\.yaml: no such file or directory\n$/],
      [['labeled.yaml', 'missing.json'], /^error: cannot read the payload file missing\.json: no such file or directory\n$/],
      [['labeled.yaml', 'bad.json'], /^error: the payload file bad\.json is not valid JSON: /],
      [['labeled.yaml', 'not-utf8.json'], /^error: the payload file not-utf8\.json is not valid UTF-8\n$/],
      // The ingress refuses such a body (400 invalid_json), so it must not match here either.
      [['labeled.yaml', 'bom.json'], /^error: the payload file bom\.json starts with a byte order mark, which a webhook delivery cannot have \(the runtime answers 400 invalid_json\); save it without one\n$/],
      [['bad.json', 'pr.json'], /^error: the filter file bad\.json is not valid JSON: Unexpected end of JSON input\n$/],
      [['labeled.yaml', 'words.json'], /^error: the payload file words\.json is not valid JSON: Unexpected token 'o'\n$/],
      [['alias.yaml', 'pr.json'], /^error: alias\.yaml:1:4: anchors \(&x\) are not allowed \(and 1 more YAML problem\)\n$/],
      [['.', 'pr.json'], /^error: cannot read the filter file \.: it is a directory\n$/],
    ];
    for (const [args, pattern] of cases) {
      const r = await run(...args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.err, pattern);
      assert.equal(r.err.split('\n').length, 2, 'one line');
      assert.equal(r.out, '');
    }
  });

  it('usage errors exit 2; --help shows an example', async () => {
    assert.equal((await run('labeled.yaml')).code, 2);
    const help = await run('--help');
    assert.equal(help.code, 0);
    assert.match(help.out, /Examples:\n {2}\$ cat only-opened\.yaml/);
    assert.match(help.out, /factory filter test only-opened\.yaml delivery\.json/);
  });
});
