/**
 * A factory with a GitHub-signed webhook, automations and a scripted-agent environment, applied
 * to a real runtime through the real plan/apply API, and GitHub-signed deliveries
 * (`@octokit/webhooks-methods`, the provider's own signer).
 */

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import { compile } from '../../../cli/compiler/compile.ts';
import { AGENTS, envYaml } from '../routes/runs-helpers.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** pull_request.opened from the octokit/webhooks examples (MIT), byte for byte. */
export const PR_OPENED: Buffer = readFileSync(path.join(HERE, '../ingress/schemes/fixtures/github/pull_request.opened.json'));

export const FACTORY = 'shop';
export const SECRET_NAME = 'github-webhook';
export const SECRET_VALUE = "It's a Secret to Everybody";
/** Pinned in webhooks/github.yaml so that automations can name it before the first apply. */
export const GITHUB_UID = 'wh_githubgithubgithubgithubgi';
export const OTHER_UID = 'wh_otherotherotherotherothera';

/** The fetch-with-key shape of TestRuntime (also met by a runtime in a child process). */
export interface Api {
  url: string;
  fetch(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>;
}

export interface AutomationSpec {
  payload?: unknown;
  enabled?: boolean;
  /** Defaults to [GITHUB_UID]; several UIDs make several triggers. */
  uids?: string[];
  prompt?: string;
  title?: string;
  /** The automation's `notify` key, as written (docs/automations.md#notify). */
  notify?: unknown;
}

/** The factory's files: `webhooks` names → pinned UIDs; automations by name. */
export function factoryFiles(automations: Record<string, AutomationSpec>, webhooks: Record<string, string> = { github: GITHUB_UID }): { path: string; text: string }[] {
  const files = [
    { path: 'factory.yaml', text: `name: ${FACTORY}\n` },
    { path: 'environments/agent.yaml', text: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) },
  ];
  for (const [name, uid] of Object.entries(webhooks)) {
    files.push({ path: `webhooks/${name}.yaml`, text: `authMode: signature\nsignatureScheme: github\nsecretName: ${SECRET_NAME}\nuid: ${uid}\n` });
  }
  for (const [name, spec] of Object.entries(automations)) {
    const triggers = (spec.uids ?? [GITHUB_UID]).map((uid) => ({
      provider: 'webhook',
      event: 'received',
      filter: { webhook_ids: [uid], ...(spec.payload !== undefined ? { payload: spec.payload } : {}) },
    }));
    const front = { triggers, environment: 'agent', ...(spec.notify !== undefined ? { notify: spec.notify } : {}), ...(spec.enabled === false ? { enabled: false } : {}), ...(spec.title ? { title: spec.title } : {}) };
    // JSON is YAML: the front matter is written as one JSON line.
    files.push({ path: `automations/${name}.md`, text: `---\n${JSON.stringify(front)}\n---\n${spec.prompt ?? `Automation ${name}: review the pull request.`}\n` });
  }
  return files;
}

/** Creates the webhook's team secret (once per runtime). */
export async function createSecret(rt: Api): Promise<void> {
  const res = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: SECRET_NAME, value: SECRET_VALUE } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`secret: ${res.status} ${await res.text()}`);
}

/** Compiles and applies the factory; throws on any error diagnostic or a non-200. */
export async function applyFactory(rt: Api, automations: Record<string, AutomationSpec>, webhooks?: Record<string, string>): Promise<Record<string, any>> {
  const { snapshot, diagnostics } = compile(factoryFiles(automations, webhooks));
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (!snapshot || errors.length) throw new Error(`factory does not compile: ${JSON.stringify(errors)}`);
  const res = await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot } });
  const body = (await res.json()) as Record<string, any>;
  if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** POSTs a GitHub-signed delivery to webhook `uid`; returns the response and the delivery id sent. */
export async function deliverGithub(rt: Api, body: Buffer, options: { uid?: string; deliveryId?: string; event?: string } = {}) {
  const deliveryId = options.deliveryId ?? randomUUID();
  const res = await fetch(`${rt.url}/webhooks/w/${options.uid ?? GITHUB_UID}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-GitHub-Event': options.event ?? 'pull_request',
      'X-GitHub-Delivery': deliveryId,
      'X-Hub-Signature-256': await sign(SECRET_VALUE, body.toString('utf8')),
    },
    body,
  });
  return { res, deliveryId, json: (await res.json()) as Record<string, any> };
}

/** The runs a delivery started, from the delivery log (`runs` of the detail view). */
export async function deliveryRuns(rt: Api, deliveryId: string, uid = GITHUB_UID): Promise<{ run_id: string; automation: string; state: string }[]> {
  const res = await rt.fetch(`/api/v1/webhooks/${uid}/deliveries/${encodeURIComponent(deliveryId)}`);
  const body = (await res.json()) as Record<string, any>;
  if (res.status !== 200) throw new Error(`delivery ${deliveryId}: ${res.status} ${JSON.stringify(body)}`);
  return body.runs;
}

/** Every WEBHOOK run of the factory, oldest first, through the run API. */
export async function webhookRuns(rt: Api): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `source=WEBHOOK&factory=${FACTORY}&limit=100${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await rt.fetch(`/api/v1/agent/runs?${q}`);
    const body = (await res.json()) as { runs: Record<string, any>[]; page_info: { next_cursor: string | null } };
    out.push(...body.runs);
    cursor = body.page_info.next_cursor;
  } while (cursor);
  return out.reverse();
}
