import { credentialHeaderMessage, isCredentialHeader } from '../../core/credential-headers.ts';
import { checkFilter, problemAtKey } from '../../core/filter.ts';
import { isOperatorKey, isPlainObject } from '../../core/filter/common.ts';
import { WEBHOOK_UID_PATTERN, RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import type { Diagnostic } from './diagnostics.ts';
import { promptOf } from './front-matter.ts';
import { closest } from './suggest.ts';
import type { ParsedFile } from './parse-file.ts';
import { PROVIDERS, warpRules } from './warp-rules.ts';
import { notifyUrlProblem } from '../../core/notify.ts';
import automationSchema from '../../schemas/automation.schema.json' with { type: 'json' };
import { repoProblems } from '../../core/repo-url.ts';
import { agentTimeoutProblem } from '../../core/duration.ts';

/** At most 20 webhooks per factory (docs/runtime.md#limits). */
export const MAX_WEBHOOKS = 20;

/** The schema's own pattern for notify.url: a URL that fails it is reported by the schema already. */
const NOTIFY_URL_SHAPE = new RegExp(automationSchema.properties.notify.properties.url.pattern);

type Report = (f: ParsedFile, pointer: string, code: string, message: string, severity?: 'error' | 'warning', mode?: 'value' | 'key') => void;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The rules that look across files or that a schema cannot say well (docs/definitions.md,
 * docs/filters.md). Each rule is a small function over the parsed files; values may be
 * schema-invalid here, so every rule checks the shape it reads.
 */
export function crossFileRules(files: ParsedFile[], runtimeWebhooks?: ReadonlyMap<string, string>): Diagnostic[] {
  const out: Diagnostic[] = [];
  const report: Report = (f, pointer, code, message, severity = 'error', mode = 'value') => {
    const pos = f.at(pointer, mode);
    out.push({ file: f.path, line: pos.line, column: pos.column, code, message, pointer, severity });
  };
  duplicateNames(files, report);
  tooManyWebhooks(files, report);
  signatureSchemes(files, report);
  deliveryIdHeaders(files, report);
  const pinned = pinnedUids(files, report);
  const environments = new Set(files.filter((f) => f.kind === 'environment').map((f) => f.name));
  for (const f of files) if (f.kind === 'automation') automationRules(f, pinned, environments, report, runtimeWebhooks);
  for (const f of files) if (f.kind === 'environment') environmentRules(f, report);
  warpRules(files, report);
  return out;
}

/** Each repo's url, ref and path as git and the executor will take them (core/repo-url.ts), and the agent's timeout (core/duration.ts). */
function environmentRules(f: ParsedFile, report: Report): void {
  const repos = isObject(f.value) && Array.isArray(f.value.repos) ? f.value.repos : [];
  repos.forEach((repo: unknown, i: number) => {
    if (!isObject(repo)) return;
    for (const p of repoProblems(repo)) report(f, `/repos/${i}/${p.key}`, 'environment.invalid_value', p.message);
  });
  const timeout = isObject(f.value) && isObject(f.value.agent) ? f.value.agent.timeout : undefined;
  const problem = typeof timeout === 'string' && TIMEOUT_SHAPE.test(timeout) ? agentTimeoutProblem(timeout) : undefined;
  if (problem) report(f, '/agent/timeout', 'environment.invalid_value', problem);
}

/** The schema's shape of a timeout: one that fails it has its schema diagnostic already. */
const TIMEOUT_SHAPE = /^(?=\d)(\d+h)?(\d+m)?(\d+s)?$/;

function duplicateNames(files: ParsedFile[], report: Report): void {
  const seen = new Map<string, ParsedFile[]>();
  for (const f of files) {
    if (f.kind === 'factory') continue;
    // An agent's skill is its agent's own, hence the scope.
    const key = `${f.kind}:${f.scope ?? ''}:${identityOf(f)}`;
    const group = seen.get(key);
    if (group) group.push(f);
    else seen.set(key, [f]);
  }
  for (const group of seen.values()) {
    if (group.length < 2) continue;
    const paths = group.map((g) => g.path).sort();
    for (const f of group) {
      report(f, '', 'repo.duplicate_name', `${f.kind} '${identityOf(f)}' is defined more than once (${paths.join(' and ')}); keep one`);
    }
  }
}

/**
 * A scorer's identity is its `name` key when it has one, else its folder, as in Warp's own
 * examples (docs/definitions.md#every-warp-key); every other definition's is its path.
 */
function identityOf(f: ParsedFile): string {
  const v = f.value as { name?: unknown } | null;
  return f.kind === 'scorer' && v !== null && typeof v === 'object' && typeof v.name === 'string' ? v.name : f.name;
}

function tooManyWebhooks(files: ParsedFile[], report: Report): void {
  const webhooks = files.filter((f) => f.kind === 'webhook').sort((a, b) => (a.name < b.name ? -1 : 1));
  if (webhooks.length <= MAX_WEBHOOKS) return;
  report(webhooks[MAX_WEBHOOKS], '', 'repo.too_many_webhooks', `this repo defines ${webhooks.length} webhooks; a factory has at most ${MAX_WEBHOOKS}`);
}

function signatureSchemes(files: ParsedFile[], report: Report): void {
  for (const f of files) {
    if (f.kind !== 'webhook' || !isObject(f.value)) continue;
    const mode = f.value.authMode ?? 'token';
    const hasScheme = f.value.signatureScheme !== undefined;
    if (mode === 'signature' && !hasScheme) {
      report(f, '/authMode', 'webhook.signature_scheme_required', "authMode 'signature' needs a signatureScheme (for example github, stripe, standard-webhooks)");
    } else if (mode !== 'signature' && hasScheme && typeof mode === 'string') {
      report(f, '/signatureScheme', 'webhook.signature_scheme_not_allowed', `signatureScheme is only for authMode 'signature'; this webhook uses '${mode}'`, 'error', 'key');
    }
  }
}

/** A delivery id header's value is stored and shown: it may not be a header that carries a credential. */
function deliveryIdHeaders(files: ParsedFile[], report: Report): void {
  for (const f of files) {
    if (f.kind !== 'webhook' || !isObject(f.value) || typeof f.value.deliveryIdHeader !== 'string') continue;
    const header = f.value.deliveryIdHeader;
    if (isCredentialHeader(header)) report(f, '/deliveryIdHeader', 'webhook.credential_delivery_id_header', credentialHeaderMessage(header));
  }
}

/** Pinned UIDs by UID → webhook name; a UID pinned twice is an error (docs/definitions.md). */
function pinnedUids(files: ParsedFile[], report: Report): Map<string, string> {
  const pinned = new Map<string, string>();
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : 1))) {
    if (f.kind !== 'webhook' || !isObject(f.value) || typeof f.value.uid !== 'string') continue;
    const other = pinned.get(f.value.uid);
    if (other !== undefined) {
      report(f, '/uid', 'webhook.duplicate_uid', `uid ${f.value.uid} is already pinned by webhook '${other}'; a UID belongs to one webhook`);
    } else pinned.set(f.value.uid, f.name);
  }
  return pinned;
}

function automationRules(
  f: ParsedFile,
  pinned: Map<string, string>,
  environments: Set<string>,
  report: Report,
  runtimeWebhooks?: ReadonlyMap<string, string>,
): void {
  if (f.frontMatter && promptOf(f.frontMatter.body) === '') {
    report(f, '/prompt', 'automation.empty_prompt', 'the prompt (the text after the front matter) is empty');
  }
  const v = f.value;
  if (!isObject(v)) return;
  // The schema's pattern reports the obvious cases; this is what only a URL parser knows
  // (a port above 65535, an unclosed IPv6 bracket, a bad %-escape in the host).
  if (isObject(v.notify) && typeof v.notify.url === 'string' && NOTIFY_URL_SHAPE.test(v.notify.url)) {
    const bad = notifyUrlProblem(v.notify.url);
    if (bad !== undefined) report(f, '/notify/url', 'automation.notify_url', `notify.url ${bad}, got ${JSON.stringify(v.notify.url)}`);
  }
  if (typeof v.environment === 'string' && RESOURCE_NAME_PATTERN.test(v.environment) && !environments.has(v.environment)) {
    report(
      f,
      '/environment',
      'automation.unknown_environment',
      unknownEnvironmentMessage(v.environment, environments),
    );
  }
  if (!Array.isArray(v.triggers)) return;
  const byUid = new Map<string, number>();
  v.triggers.forEach((t, i) => {
    if (!isObject(t)) return;
    const base = `/triggers/${i}`;
    if (t.provider !== undefined && !(PROVIDERS as readonly unknown[]).includes(t.provider)) {
      const near = typeof t.provider === 'string' ? closest(t.provider, PROVIDERS) : undefined;
      report(f, `${base}/provider`, 'automation.unknown_provider', `unknown trigger provider ${JSON.stringify(t.provider)}${near ? `; did you mean '${near}'?` : ''} (the providers: ${PROVIDERS.join(', ')})`);
    }
    // Other providers' filters are lists of values (the schema checks them); only webhook filters select UIDs.
    if (typeof t.provider === 'string' && t.provider !== 'webhook' && PROVIDERS.includes(t.provider)) return;
    const filter = t.filter;
    if (!isObject(filter)) return;
    const ids = filter.webhook_ids;
    if (Array.isArray(ids)) {
      if (ids.length !== 1) {
        report(
          f,
          `${base}/filter/webhook_ids`,
          'automation.webhook_ids_count',
          `webhook_ids must hold exactly one webhook UID, not ${ids.length}; add one trigger per webhook`,
        );
      }
      ids.forEach((id, j) => {
        if (typeof id !== 'string') return;
        const pointer = `${base}/filter/webhook_ids/${j}`;
        if (WEBHOOK_UID_PATTERN.test(id)) {
          const seenAt = byUid.get(id);
          if (seenAt !== undefined) {
            report(f, pointer, 'automation.duplicate_trigger', `trigger ${i + 1} selects webhook ${id} again (trigger ${seenAt + 1} already does); use one trigger per webhook and combine the filters`);
          } else byUid.set(id, i);
          if (!pinned.has(id)) {
            report(
              f,
              pointer,
              'automation.unknown_webhook_uid',
              `no webhook in this repo pins uid ${id}; plan checks the runtime's webhooks (a trigger whose webhook does not exist never fires)`,
              'warning',
            );
          }
          return;
        }
        const asName = id.replace(/^(\.\/)?webhooks\//, '').replace(/\.ya?ml$/, '');
        if (RESOURCE_NAME_PATTERN.test(asName)) {
          const uid = [...pinned].find(([, name]) => name === asName)?.[0];
          const known = runtimeWebhooks?.get(asName);
          const hint = uid
            ? `webhook '${asName}' pins uid ${uid} in this repo: use [${uid}]`
            : known
              ? `the runtime knows webhook '${asName}' of this factory as ${known}: use [${known}]`
              : runtimeWebhooks
                ? `the runtime has no webhook '${asName}' in this factory yet; once applied, \`factory webhook list\` shows its UID (or pin one with uid: in webhooks/${asName}.yaml)`
                : '`factory webhook list` shows the UIDs (plan gives the hint too when the runtime knows the webhook)';
          report(f, pointer, 'automation.webhook_ids_file_name', `'${id}' looks like a webhook name, but webhook_ids takes a UID (wh_...); ${hint}`);
        } else {
          report(
            f,
            pointer,
            'automation.webhook_ids_not_uid',
            `'${id}' is not a webhook UID (wh_ followed by 26 lowercase base32 characters); \`factory webhook list\` shows the UIDs`,
          );
        }
      });
    }
    if (filter.payload !== undefined) {
      for (const p of checkFilter(filter.payload)) {
        report(f, `${base}/filter/payload${p.pointer}`, p.code, p.message, 'error', problemAtKey(p.code) ? 'key' : 'value');
      }
      // At the top of a filter every key is a body key (docs/filters.md#the-grammar), so an
      // operator there names a body field called `in`, `not_in` or `exists`: almost surely meant
      // for a field, as `label: {exists: true}`.
      if (isPlainObject(filter.payload)) {
        for (const key of Object.keys(filter.payload).filter(isOperatorKey)) {
          report(
            f,
            `${base}/filter/payload/${key}`,
            'filter.operator_at_top',
            `'${key}' at the top of a payload filter is a body field named '${key}', not an operator: operators apply to a field, e.g. action: {${key}: ${key === 'exists' ? 'true' : '[opened]'}}`,
            'warning',
            'key',
          );
        }
      }
    }
  });
}

/** The warning for an environment this repo does not define: a typo of one it does gets a "did you mean". */
function unknownEnvironmentMessage(name: string, environments: Set<string>): string {
  const near = closest(name, [...environments].sort());
  const base = `environment '${name}' is not defined in this repo (environments/${name}.yaml)`;
  return near ? `${base}; did you mean '${near}'?` : `${base}; an automation runs only in an environment its own repo defines`;
}
