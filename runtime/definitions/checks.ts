import { canonicalJson, sha256Digest } from '../../core/canonical-json.ts';
import { credentialHeaderMessage, isCredentialHeader } from '../../core/credential-headers.ts';
import { validateSnapshot } from '../../core/schemas.ts';
import type { Snapshot } from '../../core/snapshot.ts';
import type { PlanInput } from './state.ts';
import { notifyUrlProblem } from '../../core/notify.ts';
import { scheduleProblems } from '../../core/schedule.ts';
import { repoProblems } from '../../core/repo-url.ts';
import { checkFilter } from '../../core/filter.ts';
import { agentTimeoutProblem } from '../../core/duration.ts';
import { standardWebhooksKey } from '../ingress/schemes/standard-webhooks.ts';

/**
 * The runtime's checks of a snapshot (docs/plan-apply.md): first the snapshot itself (schema,
 * digest, the factory named in the URL), then the facts only the runtime knows (secrets,
 * environment ownership, UIDs, limits). Pure: the route gathers the facts, these rules judge them,
 * and every problem is reported at once, each naming the file and the key (a pointer into that
 * file).
 */

/** docs/runtime.md#limits. */
export const MAX_WEBHOOKS_PER_FACTORY = 20;

/** RFC 3986 section 2.3 unreserved characters; at least 32 of them (docs/plan-apply.md#runtime-checks). */
const URL_SAFE_TOKEN = /^[A-Za-z0-9._~-]{32,}$/;

export interface CheckError {
  file: string;
  pointer: string;
  code: string;
  message: string;
  /** A conflict with other state (409) rather than a bad request (400). */
  conflict?: boolean;
}

/** What a url_token secret must be, in the words every refusal uses (docs/plan-apply.md, `secret.not_url_safe`). */
export const URL_TOKEN_RULE = 'at least 32 characters from A-Z a-z 0-9 - . _ ~';

/** True when a url_token secret may be the last URL path segment as it is (docs/plan-apply.md). */
export function isUrlSafeToken(value: string): boolean {
  return URL_SAFE_TOKEN.test(value);
}

/** What a Standard Webhooks secret must be, in the words every refusal uses (docs/plan-apply.md, `secret.not_signing_key`). */
export const SIGNING_KEY_RULE = 'the base64 of the signing key, with or without its whsec_ prefix, as the sender shows it';

/** True when a standard-webhooks webhook can verify with this secret (it decodes to a key). */
export function isSigningKey(value: string): boolean {
  return standardWebhooksKey(value) !== undefined;
}

/** `sha256:` + hex of the canonical JSON of the snapshot without its digest (core/snapshot.ts). */
export function snapshotDigest(snapshot: Snapshot): string {
  const { digest: _digest, ...rest } = snapshot;
  return sha256Digest(canonicalJson(rest));
}

/**
 * Validates a request's snapshot: the schema, its digest, and that it is the factory in the URL.
 * The runtime never trusts the CLI's own validation (docs/plan-apply.md).
 */
export function checkSnapshot(
  value: unknown,
  factoryName: string,
): { ok: true; snapshot: Snapshot } | { ok: false; errors: CheckError[] } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, errors: [{ file: '', pointer: '/snapshot', code: 'snapshot.invalid', message: 'snapshot must be an object (the output of factory build)' }] };
  }
  const result = validateSnapshot(value);
  if (!result.ok) {
    return {
      ok: false,
      errors: result.errors.map((e) => ({ ...locateInSources(value, e.pointer), code: 'snapshot.invalid', message: e.message })),
    };
  }
  const snapshot = result.value;
  const errors: CheckError[] = [];
  const digest = snapshotDigest(snapshot);
  if (digest !== snapshot.digest) {
    errors.push({ file: '', pointer: '/digest', code: 'snapshot.digest_mismatch', message: `digest ${snapshot.digest} does not match the content (expected ${digest}); rebuild the snapshot instead of editing it` });
  }
  if (snapshot.factory.name !== factoryName) {
    errors.push({ file: snapshot.factory.source.file, pointer: '/name', code: 'factory.name_mismatch', message: `the snapshot is factory '${snapshot.factory.name}', but the request is for factory '${factoryName}'` });
  }
  const seen = new Set<string>();
  for (const [i, w] of snapshot.webhooks.entries()) {
    if (w.uid && seen.has(w.uid)) errors.push({ file: w.source.file, pointer: '/uid', code: 'webhook.uid_duplicate', message: `uid ${w.uid} is pinned by two webhooks of this snapshot` });
    if (w.uid) seen.add(w.uid);
    if (w.deliveryIdHeader !== undefined && isCredentialHeader(w.deliveryIdHeader)) {
      errors.push({ file: w.source.file, pointer: '/deliveryIdHeader', code: 'webhook.credential_delivery_id_header', message: credentialHeaderMessage(w.deliveryIdHeader) });
    }
    if (snapshot.webhooks.findIndex((o) => o.name === w.name) !== i) errors.push({ file: w.source.file, pointer: '', code: 'webhook.duplicate_name', message: `webhook '${w.name}' appears twice in the snapshot` });
  }
  // The compiler's filter grammar, again: a filter it would refuse (an unknown operator, an
  // operator beside body keys) would otherwise be stored and match other than as written.
  for (const a of snapshot.automations) {
    a.triggers.forEach((t, i) => {
      if (t.filter.payload === undefined) return;
      for (const p of checkFilter(t.filter.payload)) {
        errors.push({ file: a.source.file, pointer: `/triggers/${i}/filter/payload${p.pointer}`, code: p.code, message: p.message });
      }
    });
  }
  return errors.length ? { ok: false, errors } : { ok: true, snapshot };
}

/**
 * Maps a pointer into the snapshot (e.g. `/webhooks/2/secretName`) to the resource's file and a
 * pointer into that file (`/secretName`). An automation's `prompt` is its body, not a key.
 */
export function locateInSources(value: unknown, pointer: string): { file: string; pointer: string } {
  const parts = pointer.split('/').slice(1);
  const snap = value as { factory?: { source?: { file?: unknown } }; [k: string]: unknown };
  const fileOf = (node: unknown): string | undefined => {
    const file = (node as { source?: { file?: unknown } } | undefined)?.source?.file;
    return typeof file === 'string' ? file : undefined;
  };
  if (parts[0] === 'factory') {
    return { file: fileOf(snap.factory) ?? 'factory.yaml', pointer: '/' + parts.slice(1).join('/') };
  }
  if (['webhooks', 'automations', 'environments'].includes(parts[0] ?? '') && parts.length >= 2) {
    const list = snap[parts[0]];
    const item = Array.isArray(list) ? list[Number(parts[1])] : undefined;
    const file = fileOf(item);
    if (file) {
      const rest = parts.slice(2);
      return { file, pointer: rest.length ? '/' + rest.join('/') : '' };
    }
  }
  return { file: '', pointer };
}

/**
 * The runtime checks (docs/plan-apply.md#runtime-checks) against the facts in `input`. Returns
 * every problem. `maxWebhooks` is config.limits.webhooksPerFactory (docs/runtime.md#limits, default
 * 20).
 */
export function checkAgainstRuntime(
  snapshot: Snapshot,
  input: PlanInput,
  options: {
    maxWebhooks?: number;
    /**
     * Whether the caller may see `factory` (its key's factories, docs/runtime.md#factory-limited-keys):
     * a conflict with a factory it may not see names neither that factory nor its webhook, only
     * what the caller sent (default: every factory may be named).
     */
    mayName?: (factory: string) => boolean;
  } = {},
): CheckError[] {
  const maxWebhooks = options.maxWebhooks ?? MAX_WEBHOOKS_PER_FACTORY;
  const mayName = options.mayName ?? (() => true);
  /** "factory 'x'", or "another factory" for one the caller may not see. */
  const factoryNamed = (owner: string) => (mayName(owner) ? `factory '${owner}'` : 'another factory');
  const errors: CheckError[] = [];
  const factoryFile = snapshot.factory.source.file;
  if (input.factory?.managedBy === 'api') {
    errors.push({ file: factoryFile, pointer: '/name', code: 'factory.managed_by_api', conflict: true, message: `factory '${snapshot.factory.name}' was created through the API or the dashboard; its webhooks cannot be managed by definitions (docs/ingress.md#webhook-lifecycle)` });
  }
  if (snapshot.webhooks.length > maxWebhooks) {
    for (const w of snapshot.webhooks.slice(maxWebhooks)) {
      errors.push({ file: w.source.file, pointer: '', code: 'webhook.limit_exceeded', message: `factory '${snapshot.factory.name}' defines ${snapshot.webhooks.length} webhooks; at most ${maxWebhooks} are allowed` });
    }
  }
  const factory = snapshot.factory.name;
  /** A secret this factory may not bind is reported as such and judged no further. */
  const unusable = (file: string, pointer: string, name: string): boolean => {
    const secret = input.secrets.get(name);
    if (!secret) {
      errors.push({ file, pointer, code: 'secret.not_found', message: `team secret '${name}' does not exist; create it with: factory secret create ${name}` });
      return true;
    }
    if (secret.factories && !secret.factories.includes(factory)) {
      errors.push({
        file, pointer, code: 'secret.not_allowed', conflict: true,
        message: `team secret '${name}' may not be used by factory '${factory}'; an admin can allow it with: factory secret grant ${name} --factory ${factory}`,
      });
      return true;
    }
    return false;
  };
  const live = new Map(input.webhooks.map((w) => [w.name, w]));
  for (const w of snapshot.webhooks) {
    const file = w.source.file;
    const secret = unusable(file, '/secretName', w.secretName) ? undefined : input.secrets.get(w.secretName);
    if (secret?.version === null && w.authMode !== 'signature') {
      errors.push({ file, pointer: '/secretName', code: 'secret.pending', message: `team secret '${w.secretName}' has no value yet (pending); a ${w.authMode} webhook needs one: factory secret update ${w.secretName}` });
    } else if (secret && secret.version !== null && w.authMode === 'url_token' && secret.urlSafe === false) {
      errors.push({ file, pointer: '/secretName', code: 'secret.not_url_safe', message: `team secret '${w.secretName}' cannot be a url_token: it must be ${URL_TOKEN_RULE} (RFC 3986 unreserved)` });
    } else if (secret && secret.version !== null && w.signatureScheme === 'standard-webhooks' && secret.signingKey === false) {
      errors.push({ file, pointer: '/secretName', code: 'secret.not_signing_key', message: `team secret '${w.secretName}' cannot verify standard-webhooks signatures: it must be ${SIGNING_KEY_RULE}` });
    }
    const existing = live.get(w.name);
    if (w.uid && existing && existing.uid !== w.uid) {
      errors.push({ file, pointer: '/uid', code: 'webhook.uid_changed', conflict: true, message: `webhook '${w.name}' already has UID ${existing.uid}; a UID cannot change once the webhook exists` });
    } else if (w.uid && !(existing && existing.uid === w.uid)) {
      const holder = input.pinnedUidHolders.get(w.uid);
      if (holder) {
        const deleted = holder.deletedAt ? 'deleted ' : '';
        const where =
          holder.factory === snapshot.factory.name
            ? `${deleted}webhook '${holder.name}'`
            : mayName(holder.factory)
              ? `${deleted}webhook '${holder.name}' of factory '${holder.factory}'`
              : `a ${deleted}webhook of another factory`;
        errors.push({ file, pointer: '/uid', code: 'webhook.uid_taken', conflict: true, message: `uid ${w.uid} belongs to ${where}; a UID is never reused` });
      }
    }
  }
  const defined = new Set(snapshot.environments.map((e) => e.name));
  for (const env of snapshot.environments) {
    // The compiler's repo and timeout rules, again: a snapshot may come from elsewhere.
    (env.repos ?? []).forEach((repo, i) => {
      for (const p of repoProblems(repo)) errors.push({ file: env.source.file, pointer: `/repos/${i}/${p.key}`, code: 'environment.invalid_value', message: p.message });
    });
    const timeoutProblem = agentTimeoutProblem(env.agent.timeout || '30m');
    if (timeoutProblem) errors.push({ file: env.source.file, pointer: '/agent/timeout', code: 'environment.invalid_value', message: timeoutProblem });
    const owner = input.environmentOwners.get(env.name);
    if (owner && owner !== snapshot.factory.name) {
      errors.push({ file: env.source.file, pointer: '', code: 'environment.owned', conflict: true, message: `environment '${env.name}' belongs to ${factoryNamed(owner)}; environment ids are unique across the runtime` });
    }
    for (const [key, value] of Object.entries(env.env)) {
      // A Warp agent's key comes from the harness of the file its environment names (docs/definitions.md#warp-agents-run-here).
      const harness = env.source.file === snapshot.factory.source.file ? '/agentDefaults/harness' : '/harness';
      const pointer = env.warp ? `${harness}/auth/secretName` : `/env/${key}/secret`;
      if (typeof value === 'object') unusable(env.source.file, pointer, value.secret);
    }
  }
  // An automation runs with its environment's variables and secrets, so it may only use an
  // environment its own factory defines; after this apply, those are exactly the snapshot's.
  for (const a of snapshot.automations) {
    // The compiler's schedule rules, again: a snapshot may come from elsewhere, and a schedule
    // that does not parse, or two under one name, would never fire while listed as enabled.
    for (const p of scheduleProblems((a.schedules ?? []).map((s, i) => ({ at: i, cron: s.cron, name: s.name })))) {
      const message =
        'error' in p ? p.error
        : p.name ? `schedule name '${p.name}' is used twice; names tell an automation's schedules apart`
        : 'two schedules have no name; give each schedule of an automation a name';
      errors.push({ file: a.source.file, pointer: '/triggers', code: 'automation.invalid_schedule', message });
    }
    if (a.notify) {
      // Its runs' notifications are signed with this secret, read when each is sent.
      unusable(a.source.file, '/notify/secretName', a.notify.secretName);
      // The same rule as a run created through the API: a URL no request could be sent to fails here, not at every attempt.
      const bad = notifyUrlProblem(a.notify.url);
      if (bad !== undefined) errors.push({ file: a.source.file, pointer: '/notify/url', code: 'automation.notify_url', message: `notify.url ${bad}` });
    }
    if (defined.has(a.environment)) continue;
    const owner = input.environmentOwners.get(a.environment);
    if (owner && owner !== factory) {
      errors.push({ file: a.source.file, pointer: '/environment', code: 'environment.not_owned', conflict: true, message: `environment '${a.environment}' belongs to ${factoryNamed(owner)}; an automation may only use an environment of its own factory (define one in environments/)` });
    } else if (owner) {
      errors.push({ file: a.source.file, pointer: '/environment', code: 'environment.not_found', message: `environment '${a.environment}' is not in this snapshot, so this apply would delete it; keep environments/${a.environment}.yaml` });
    } else {
      errors.push({ file: a.source.file, pointer: '/environment', code: 'environment.not_found', message: `environment '${a.environment}' is not defined in this factory; add environments/${a.environment}.yaml` });
    }
  }
  return errors;
}
