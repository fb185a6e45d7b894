import { isAbsolute, resolve } from 'node:path';
import { canonicalJson, sha256Digest, sha256Hex } from '../../core/canonical-json.ts';
import {
  SNAPSHOT_FORMAT_VERSION,
  type AutomationDef,
  type EnvironmentDef,
  type Snapshot,
  type WebhookDef,
} from '../../core/snapshot.ts';
import { promptOf } from './front-matter.ts';
import type { ParsedFile } from './parse-file.ts';

type Obj = Record<string, any>;
const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Builds the snapshot from files that compiled without errors (so every value matches its
 * schema). Defaults are filled in (SPEC 2), resources sorted by name, and `digest` is the sha256
 * of the canonical JSON without it (SPEC 4).
 */
export function buildSnapshot(files: ParsedFile[], sources: { path: string; text: string }[], root?: string): Snapshot {
  const factoryFile = files.find((f) => f.kind === 'factory')!;
  const fv = factoryFile.value as Obj;
  const webhooks: WebhookDef[] = [];
  const automations: AutomationDef[] = [];
  const environments: EnvironmentDef[] = [];
  for (const f of files) {
    const v = f.value as Obj;
    const source = { file: f.path };
    if (f.kind === 'webhook') {
      webhooks.push({
        name: f.name,
        authMode: v.authMode ?? 'token',
        signatureScheme: v.signatureScheme,
        secretName: v.secretName,
        deliveryIdHeader: v.deliveryIdHeader,
        description: v.description,
        uid: v.uid,
        source,
      });
    } else if (f.kind === 'automation') {
      automations.push({
        name: f.name,
        title: v.title,
        enabled: v.enabled ?? true,
        environment: v.environment,
        triggers: (v.triggers as Obj[]).map((t) => ({
          provider: 'webhook',
          event: 'received',
          filter: { webhook_ids: [t.filter.webhook_ids[0]], payload: t.filter.payload },
        })),
        prompt: promptOf(f.frontMatter!.body),
        source,
      });
    } else if (f.kind === 'environment') {
      environments.push({
        name: f.name,
        description: v.description,
        repos: ((v.repos ?? []) as Obj[]).map((r) => ({ url: resolveRepoUrl(r.url, root), ref: r.ref, path: r.path })),
        setup: v.setup ?? [],
        agent: { command: v.agent.command, format: v.agent.format ?? 'text', timeout: v.agent.timeout ?? '30m' },
        env: v.env ?? {},
        source,
      });
    }
  }
  const hashes: Record<string, string> = {};
  for (const s of sources) hashes[s.path] = sha256Hex(s.text);
  const body = {
    format_version: SNAPSHOT_FORMAT_VERSION,
    factory: { name: fv.name, description: fv.description, source: { file: factoryFile.path } },
    webhooks: webhooks.sort(byName),
    automations: automations.sort(byName),
    environments: environments.sort(byName),
    sources: hashes,
  };
  // Through canonical JSON and back: drops undefined members, so the object equals its bytes.
  const clean = JSON.parse(canonicalJson(body)) as Omit<Snapshot, 'digest'>;
  return { ...clean, digest: sha256Digest(canonicalJson(clean)) };
}

/**
 * A repo URL starting with ./ or ../ is relative to the factory repo and becomes an absolute
 * path here (docs/definitions.md): the runtime clones from its own working directory, not the
 * repo's. The snapshot then depends on where the repo is checked out. Without a root it stays.
 */
export function resolveRepoUrl(url: string, root?: string): string {
  if (!root || isAbsolute(url)) return url;
  if (url === '.' || url === '..' || url.startsWith('./') || url.startsWith('../')) return resolve(root, url);
  return url;
}

/** Canonical JSON of the snapshot plus a final newline: what `factory build` writes. */
export function writeSnapshot(snapshot: Snapshot): string {
  return canonicalJson(snapshot) + '\n';
}
