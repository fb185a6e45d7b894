import type { Snapshot, WebhookDef, AutomationDef, EnvironmentDef } from '../../../core/snapshot.ts';
import { snapshotDigest } from '../../../runtime/definitions/checks.ts';
import type { PlanInput, SecretFacts } from '../../../runtime/definitions/state.ts';

/** Test fixtures for the pure planner: a small valid snapshot and an empty runtime. */

export const UID_A = 'wh_aaaaaaaaaaaaaaaaaaaaaaaaaa';
export const UID_B = 'wh_bbbbbbbbbbbbbbbbbbbbbbbbbb';

export function webhook(name: string, extra: Partial<WebhookDef> = {}): WebhookDef {
  return { name, authMode: 'token', secretName: `${name}-secret`, source: { file: `webhooks/${name}.yaml` }, ...extra };
}

export function environment(name: string, extra: Partial<EnvironmentDef> = {}): EnvironmentDef {
  return {
    name, repos: [], setup: [], agent: { command: ['echo', 'hi'], format: 'text', timeout: '30m' }, env: {},
    source: { file: `environments/${name}.yaml` }, ...extra,
  };
}

export function automation(name: string, uid: string, extra: Partial<AutomationDef> = {}): AutomationDef {
  return {
    name, enabled: true, environment: 'sandbox', prompt: 'Do the thing.\n',
    triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [uid] } }],
    source: { file: `automations/${name}.md` }, ...extra,
  };
}

export function snapshot(parts: Partial<Omit<Snapshot, 'digest'>> = {}): Snapshot {
  const body: Omit<Snapshot, 'digest'> = {
    format_version: 1,
    factory: { name: 'demo', source: { file: 'factory.yaml' } },
    webhooks: [webhook('ci', { uid: UID_A })],
    automations: [automation('triage', UID_A)],
    environments: [environment('sandbox')],
    sources: {},
    ...parts,
  };
  const s = { ...body, digest: '' } as Snapshot;
  s.digest = snapshotDigest(s);
  return s;
}

/** A runtime that knows nothing yet, with the given secrets (name → current version). */
export function emptyInput(secrets: Record<string, SecretFacts> = { 'ci-secret': { version: 1 } }): PlanInput {
  return {
    factory: undefined,
    webhooks: [],
    automations: [],
    environments: [],
    secrets: new Map(Object.entries(secrets)),
    environmentOwners: new Map(),
    pinnedUidHolders: new Map(),
  };
}
