import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile } from '../../../cli/compiler/compile.ts';
import { loadRepo } from '../../../cli/compiler/index.ts';
import { runCliInProcess } from '../../helpers/cli.ts';

/**
 * Two rules of the compiler, through the CLI (`factory validate`, in-process) on real files:
 * a deliveryIdHeader that may carry a credential, and definitions reached through a symbolic link
 * that leaves the repo.
 */

/** `factory validate .` run in `dir`, so diagnostics name repo-relative paths. */
function validate(dir: string, ...flags: string[]) {
  return runCliInProcess(['validate', '.', ...flags], { cwd: dir });
}

async function tempDir(t: { after(fn: () => Promise<void>): void }, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function write(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
}

test('deliveryIdHeader naming a credential header is an error at the value, for every kind of credential', async (t) => {
  const dir = await tempDir(t, 'factory-hygiene-');
  const headers = ['Authorization', 'cookie', 'Proxy-Authorization', 'X-Hub-Signature-256', 'X-Gitlab-Token', 'Stripe-Signature', 'X-Slack-Request-Timestamp', 'webhook-timestamp', 'X-Api-Key', 'X-Hook-Secret'];
  const files: Record<string, string> = { 'factory.yaml': 'name: hygiene\n', 'webhooks/fine.yaml': 'secretName: s\ndeliveryIdHeader: X-CI-Build-Id\n' };
  headers.forEach((h, i) => (files[`webhooks/w${i}.yaml`] = `# a comment first\nauthMode: token\nsecretName: s\ndeliveryIdHeader:   ${h}\n`));
  await write(dir, files);

  const r = await validate(dir);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const lines = r.stdout.split('\n').filter((l) => l.includes('webhook.credential_delivery_id_header'));
  assert.equal(lines.length, headers.length, r.stdout);
  headers.forEach((h, i) => {
    // Line 4, column 21: the value itself, after the extra spaces.
    assert.ok(lines.some((l) => l.startsWith(`webhooks/w${i}.yaml:4:21: error webhook.credential_delivery_id_header: '${h}' may carry a credential`)), `${h}\n${r.stdout}`);
  });
  assert.ok(!r.stdout.includes('webhooks/fine.yaml'), r.stdout);
});

test('schemes\' own id headers and ordinary id headers validate clean', async (t) => {
  const dir = await tempDir(t, 'factory-hygiene-');
  await write(dir, {
    'factory.yaml': 'name: hygiene\n',
    'webhooks/a.yaml': 'secretName: s\ndeliveryIdHeader: Idempotency-Key\n',
    'webhooks/b.yaml': 'authMode: signature\nsignatureScheme: github\nsecretName: s\ndeliveryIdHeader: X-GitHub-Delivery\n',
    'webhooks/c.yaml': 'secretName: s\ndeliveryIdHeader: X-Request-Id\n',
  });
  const r = await validate(dir);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('a definitions file or directory linked from outside the repo is reported, never read', async (t) => {
  const outside = await tempDir(t, 'factory-outside-');
  const dir = await tempDir(t, 'factory-hygiene-');
  // What a link could pull in: a secret-looking file, valid YAML so that reading it would "work".
  const SENTINEL = 'sentinel-from-outside-the-repo-4f1c';
  await write(outside, {
    'stolen.yaml': `secretName: s\ndescription: ${SENTINEL}\n`,
    'linked-dir/w.yaml': `secretName: s\ndescription: ${SENTINEL}\n`,
    'factory.yaml': `name: outside\ndescription: ${SENTINEL}\n`,
    'prompt.md': `---\ntriggers: []\nenvironment: e\n---\n${SENTINEL}\n`,
  });
  await write(dir, {
    'factory.yaml': 'name: hygiene\n',
    'webhooks/real.yaml': 'secretName: s\n',
    'environments/e.yaml': 'agent: {command: [a]}\n',
    'common/inside.yaml': 'secretName: s\n',
  });
  await symlink(join(outside, 'stolen.yaml'), join(dir, 'webhooks', 'stolen.yaml'));
  await symlink(join(outside, 'prompt.md'), join(dir, 'automations-prompt.md'));
  await mkdir(join(dir, 'automations'), { recursive: true });
  await symlink(join(outside, 'prompt.md'), join(dir, 'automations', 'linked.md'));
  // A relative link that climbs out of the repo.
  await symlink('../../' + join(outside.split('/').pop()!, 'stolen.yaml'), join(dir, 'webhooks', 'climb.yaml'));
  // Links inside the repo keep working.
  await symlink(join(dir, 'common', 'inside.yaml'), join(dir, 'webhooks', 'inside.yaml'));
  await symlink('../common/inside.yaml', join(dir, 'webhooks', 'relative-inside.yaml'));

  const r = await validate(dir, '--format', 'json');
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const diags = JSON.parse(r.stdout) as { file: string; line: number; column: number; code: string; message: string; severity: string }[];
  const outsideDiags = diags.filter((d) => d.code === 'file.outside_repo');
  assert.deepEqual(outsideDiags.map((d) => d.file).sort(), ['automations/linked.md', 'webhooks/climb.yaml', 'webhooks/stolen.yaml']);
  for (const d of outsideDiags) {
    assert.equal(`${d.line}:${d.column}`, '1:1');
    assert.match(d.message, /symbolic link .* outside the repo/);
  }
  assert.ok(!r.stdout.includes(SENTINEL) && !r.stderr.includes(SENTINEL), 'nothing of the outside files was read');
  assert.deepEqual(diags.filter((d) => d.code !== 'file.outside_repo' && d.severity === 'error'), [], r.stdout);

  // The text format names the file with its position, like every diagnostic.
  const text = await validate(dir);
  assert.match(text.stdout, /^webhooks\/stolen\.yaml:1:1: error file\.outside_repo: /m);

  // The same repo without the outside links compiles, with the inside links read as files.
  await rm(join(dir, 'webhooks', 'stolen.yaml'));
  await rm(join(dir, 'webhooks', 'climb.yaml'));
  await rm(join(dir, 'automations', 'linked.md'));
  const files = await loadRepo(dir);
  const result = compile(files);
  assert.ok(result.snapshot, JSON.stringify(result.diagnostics));
  assert.deepEqual(result.snapshot.webhooks.map((w) => w.name).sort(), ['inside', 'real', 'relative-inside']);
});

test('a linked definitions directory, or factory.yaml, that leads outside the repo is reported file by file', async (t) => {
  const outside = await tempDir(t, 'factory-outside-');
  const dir = await tempDir(t, 'factory-hygiene-');
  await write(outside, { 'hooks/a.yaml': 'secretName: s\n', 'hooks/b.yaml': 'secretName: s\n', 'factory.yaml': 'name: hygiene\n' });
  await symlink(join(outside, 'hooks'), join(dir, 'webhooks'));
  await symlink(join(outside, 'factory.yaml'), join(dir, 'factory.yaml'));
  const r = await validate(dir, '--format', 'json');
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const diags = JSON.parse(r.stdout) as { file: string; code: string }[];
  assert.deepEqual(
    diags.filter((d) => d.code === 'file.outside_repo').map((d) => d.file).sort(),
    ['factory.yaml', 'webhooks/a.yaml', 'webhooks/b.yaml'],
  );
});

test('a repo reached through a symbolic link is judged by its real path (its own files are inside)', async (t) => {
  const parent = await tempDir(t, 'factory-parent-');
  const real = join(parent, 'real');
  await write(real, { 'factory.yaml': 'name: hygiene\n', 'webhooks/a.yaml': 'secretName: s\n' });
  await symlink(real, join(parent, 'link'));
  const r = await validate(join(parent, 'link'));
  assert.equal(r.code, 0, r.stdout + r.stderr);
});
