import { conflict, FactoryError, invalidRequest, notFound, type FieldError } from '../../core/errors.ts';
import { credentialHeaderMessage, isCredentialHeader } from '../../core/credential-headers.ts';
import { newStandardWebhooksSecret, newTokenSecret, RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import { SIGNATURE_SCHEMES, type AuthMode, type SignatureScheme } from '../../core/snapshot.ts';
import { isSigningKey, isUrlSafeToken, SIGNING_KEY_RULE, URL_TOKEN_RULE } from '../definitions/checks.ts';
import type { WebhookRecord } from '../definitions/state.ts';
import webhookSchema from '../../schemas/webhook.schema.json' with { type: 'json' };
import { DEFINITIONS_LOCK } from '../store/definitions.ts';
import type { Store } from '../store/index.ts';
import { SECRET_NAME_PATTERN, secretAllows, type SecretMeta } from '../store/secrets.ts';
import { iso } from '../clock.ts';
import { charCount, echoed } from '../../core/text.ts';

/**
 * Webhook lifecycle (docs/ingress.md#webhook-lifecycle) for the management API: create, enable,
 * disable, rotate, delete, set-secret. The rules live here; the writes are store.defs /
 * store.secrets primitives, each operation in one store transaction.
 */

export interface CreateWebhookInput {
  name: string;
  authMode: AuthMode;
  signatureScheme?: SignatureScheme;
  /** An existing team secret to bind, or the name for the new one (default `<factory>-<name>-secret`). */
  secretName?: string;
  /** The provider's signing secret (signature mode); blank means generate or two-step. */
  secret?: string;
  deliveryIdHeader?: string;
  description?: string;
}

export interface LifecycleResult {
  webhook: WebhookRecord;
  /** A generated or newly set credential, shown exactly once (docs/ingress.md#webhook-lifecycle). */
  secret?: string;
  /** For the two-step provider flow: what to do next, in words. */
  nextStep?: string;
}

/**
 * Who asks, for the secret rules of docs/runtime.md#secrets-and-webhooks: a `manage` key limited
 * to named factories may write a value only into a secret that its webhook's factory owns alone.
 * Admin keys and unlimited `manage` keys are not limited.
 */
export interface SecretWriter {
  factoryLimited: boolean;
}

const UNLIMITED: SecretWriter = { factoryLimited: false };

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

/** The suggested team secret name for an API-created webhook. */
export const defaultSecretName = (factory: string, name: string) => `${factory}-${name}-secret`;

/** The longest description a webhook may have: the definitions file's cap, for one created through the API too. */
const MAX_DESCRIPTION: number = webhookSchema.properties.description.maxLength;

/** Validates a create request body (snake_case, as the API takes it). Throws 400 listing every problem. */
export function parseCreateWebhook(body: unknown): CreateWebhookInput {
  const errors: FieldError[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  const known = ['name', 'auth_mode', 'signature_scheme', 'secret_name', 'secret', 'delivery_id_header', 'description'];
  for (const key of Object.keys(b)) if (!known.includes(key)) errors.push({ pointer: `/${key}`, message: `unknown field; expected one of ${known.join(', ')}` });
  const str = (key: string) => {
    const v = b[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') errors.push({ pointer: `/${key}`, message: 'must be a string' });
    return typeof v === 'string' ? v : undefined;
  };
  const name = str('name');
  if (name === undefined) errors.push({ pointer: '/name', message: 'is required' });
  else if (!RESOURCE_NAME_PATTERN.test(name)) errors.push({ pointer: '/name', message: `must match ${RESOURCE_NAME_PATTERN.source}` });
  const authMode = (str('auth_mode') ?? 'token') as AuthMode;
  if (!['token', 'url_token', 'signature'].includes(authMode)) errors.push({ pointer: '/auth_mode', message: 'must be token, url_token or signature' });
  const scheme = str('signature_scheme') as SignatureScheme | undefined;
  if (authMode === 'signature' && scheme === undefined) errors.push({ pointer: '/signature_scheme', message: 'is required with auth_mode signature' });
  if (scheme !== undefined && authMode !== 'signature') errors.push({ pointer: '/signature_scheme', message: 'is only allowed with auth_mode signature' });
  if (scheme !== undefined && !SIGNATURE_SCHEMES.includes(scheme)) errors.push({ pointer: '/signature_scheme', message: `must be one of ${SIGNATURE_SCHEMES.join(', ')}` });
  const secretName = str('secret_name');
  if (secretName !== undefined && !SECRET_NAME_PATTERN.test(secretName)) errors.push({ pointer: '/secret_name', message: `must match ${SECRET_NAME_PATTERN.source}` });
  const secret = str('secret');
  if (secret !== undefined && secret !== '' && authMode !== 'signature') {
    errors.push({ pointer: '/secret', message: 'token and url_token secrets are generated; give a secret only with auth_mode signature' });
  }
  const deliveryIdHeader = str('delivery_id_header');
  if (deliveryIdHeader !== undefined && !HEADER_NAME.test(deliveryIdHeader)) errors.push({ pointer: '/delivery_id_header', message: 'must be an HTTP header name' });
  else if (deliveryIdHeader !== undefined && isCredentialHeader(deliveryIdHeader)) errors.push({ pointer: '/delivery_id_header', message: credentialHeaderMessage(deliveryIdHeader) });
  const description = str('description');
  if (description !== undefined && charCount(description) > MAX_DESCRIPTION) errors.push({ pointer: '/description', message: `must be at most ${MAX_DESCRIPTION} characters` });
  if (errors.length) throw invalidRequest('The webhook cannot be created as asked.', errors);
  return { name: name!, authMode, signatureScheme: scheme, secretName, secret: secret || undefined, deliveryIdHeader, description };
}

/**
 * Creates an API-managed webhook (docs/ingress.md#webhook-lifecycle). The factory is created as
 * API-managed when absent; a definitions-managed factory refuses with 409.
 */
export function createWebhook(store: Store, factory: string, input: CreateWebhookInput, maxPerFactory: number, writer: SecretWriter = UNLIMITED): LifecycleResult {
  if (!RESOURCE_NAME_PATTERN.test(factory)) throw invalidRequest(`"${factory}" is not a valid factory name.`);
  return store.transaction(() => {
    // Checks, then writes: replicas on one PostgreSQL database take turns, as applies do
    // (runtime/routes/definitions.ts), so a name or the webhook count cannot be taken twice.
    store.lockUntilCommit(DEFINITIONS_LOCK);
    const f = store.defs.getFactory(factory) ?? store.defs.createFactory(factory, 'api');
    if (f.managedBy === 'definitions') {
      throw conflict(`The factory "${factory}" is managed by definitions: add webhooks/${input.name}.yaml to its repo and run factory apply.`);
    }
    if (store.defs.getWebhookByName(factory, input.name)) throw conflict(`The factory "${factory}" already has a webhook named "${input.name}".`);
    if (store.defs.listWebhooks(factory).length >= maxPerFactory) {
      throw conflict(`The factory "${factory}" already has ${maxPerFactory} webhooks, the most it may have.`);
    }
    const secretName = input.secretName ?? defaultSecretName(factory, input.name);
    const existing = store.secrets.get(secretName);
    if (existing) refuseBinding(existing, factory);
    const set = (value: string) => setSecret(store, secretName, value, factory, writer);
    let shown: string | undefined;
    let version: number | null;
    if (input.authMode !== 'signature') {
      // A named existing secret with a value is bound as it is; otherwise one is generated.
      if (existing?.has_value && input.secretName !== undefined) {
        if (input.authMode === 'url_token') refuseUnsafeUrlToken(store, secretName, `the url_token webhook "${input.name}"`);
        version = existing.current_version;
      } else version = set((shown = newTokenSecret()));
    } else if (input.secret !== undefined) {
      if (input.signatureScheme === 'standard-webhooks') refuseNonKeyValue(input.secret, '/secret');
      version = set(input.secret);
    } else if (existing?.has_value && input.secretName !== undefined) {
      if (input.signatureScheme === 'standard-webhooks') refuseNonKeySecret(store, secretName, `the standard-webhooks webhook "${input.name}"`);
      version = existing.current_version;
    } else if (input.signatureScheme === 'standard-webhooks') {
      version = set((shown = newStandardWebhooksSecret()));
    } else {
      // Two-step provider flow: the provider generates the secret after it knows the URL.
      if (!existing) store.secrets.create(secretName, null, [factory]);
      version = null;
    }
    const webhook = store.defs.insertWebhook({
      factory,
      name: input.name,
      authMode: input.authMode,
      signatureScheme: input.signatureScheme ?? null,
      secretName,
      secretVersion: version,
      deliveryIdHeader: input.deliveryIdHeader ?? null,
      description: input.description ?? null,
      enabled: version !== null,
      managedBy: 'api',
    });
    const nextStep =
      version === null
        ? `Give the provider this webhook's URL, then pass the signing secret it shows to \`factory webhook set-secret ${webhook.uid}\`; that enables the webhook.`
        : undefined;
    return { webhook, secret: shown, nextStep };
  });
}

/** Enable: deliveries resume, bound to the secret's current version (docs/ingress.md#webhook-lifecycle). */
export function enableWebhook(store: Store, uid: string): LifecycleResult {
  return store.transaction(() => {
    const w = live(store, uid);
    const meta = store.secrets.get(w.secretName);
    if (!meta?.has_value) {
      const how =
        w.managedBy === 'definitions'
          ? `give it one with \`factory secret update ${w.secretName}\``
          : `give it one with \`factory webhook set-secret ${w.uid}\``;
      throw conflict(`The webhook's secret "${w.secretName}" has no value yet; ${how}, then enable the webhook.`);
    }
    if (w.authMode === 'url_token') refuseUnsafeUrlToken(store, w.secretName, `the url_token webhook "${w.name}"`);
    if (w.signatureScheme === 'standard-webhooks') refuseNonKeySecret(store, w.secretName, `the standard-webhooks webhook "${w.name}"`);
    return { webhook: store.defs.updateWebhook(uid, { enabled: true, secretVersion: meta.current_version }) };
  });
}

/** Disable: 404 at once; the log and automations stay (docs/ingress.md#webhook-lifecycle). */
export function disableWebhook(store: Store, uid: string): LifecycleResult {
  return store.transaction(() => {
    live(store, uid);
    return { webhook: store.defs.updateWebhook(uid, { enabled: false }) };
  });
}

/** Delete an API-managed webhook: 404 at once, UID never reused. */
export function deleteWebhook(store: Store, uid: string): LifecycleResult {
  return store.transaction(() => {
    const w = live(store, uid);
    if (w.managedBy === 'definitions') {
      throw conflict(`The webhook "${w.name}" is managed by definitions: remove ${w.sourceFile ?? `webhooks/${w.name}.yaml`} from the factory repo and run factory apply.`);
    }
    return { webhook: store.defs.deleteWebhook(uid) };
  });
}

/**
 * Rotate: a new secret version, bound at once, so the old one is refused on the very next
 * request. Generated for token, url_token and standard-webhooks; other schemes take the
 * provider's new secret (`secret`).
 */
export function rotateWebhook(store: Store, uid: string, secret?: string, writer: SecretWriter = UNLIMITED): LifecycleResult {
  return store.transaction(() => {
    const w = live(store, uid);
    refuseDefinitions(w);
    let value = secret || undefined;
    let shown: string | undefined;
    if (w.authMode !== 'signature') {
      if (value !== undefined) throw invalidRequest('token and url_token secrets are generated; rotate takes no secret.');
      value = shown = newTokenSecret();
    } else if (value === undefined) {
      if (w.signatureScheme !== 'standard-webhooks') {
        throw invalidRequest(`The ${w.signatureScheme} provider generates this secret: rotate it there, then pass the new one to \`factory webhook set-secret ${w.uid}\`.`);
      }
      value = shown = newStandardWebhooksSecret();
    } else if (w.signatureScheme === 'standard-webhooks') refuseNonKeyValue(value, '/secret');
    const version = setSecret(store, w.secretName, value, w.factory, writer);
    return { webhook: store.defs.updateWebhook(uid, { secretVersion: version, enabled: w.enabled }), secret: shown };
  });
}

/** The second step of the provider flow (and a provider-side rotation): sets the secret and enables. */
export function setWebhookSecret(store: Store, uid: string, secret: unknown, writer: SecretWriter = UNLIMITED): LifecycleResult {
  if (typeof secret !== 'string' || secret === '') {
    throw invalidRequest('The secret must be a non-empty string.', [{ pointer: '/secret', message: 'is required' }]);
  }
  return store.transaction(() => {
    const w = live(store, uid);
    refuseDefinitions(w);
    if (w.authMode !== 'signature') throw invalidRequest('Only signature webhooks take a provider secret; token and url_token secrets are generated (use rotate).');
    if (w.signatureScheme === 'standard-webhooks') refuseNonKeyValue(secret, '/secret');
    const version = setSecret(store, w.secretName, secret, w.factory, writer);
    return { webhook: store.defs.updateWebhook(uid, { secretVersion: version, enabled: true }) };
  });
}

/**
 * Sets `value` as the secret's newest version for a webhook of `factory`; returns the version.
 * A secret created here belongs to that factory alone. An existing one must be one the factory
 * may bind, and a factory-limited key may write only into a secret the factory owns alone:
 * anything shared would let it replace a credential that other factories' webhooks or
 * environments rely on.
 */
function setSecret(store: Store, name: string, value: string, factory: string, writer: SecretWriter): number {
  const meta = store.secrets.get(name);
  if (!meta) return store.secrets.create(name, value, [factory]).current_version;
  refuseBinding(meta, factory);
  const own = meta.factories !== null && meta.factories.length === 1 && meta.factories[0] === factory;
  if (writer.factoryLimited && !own) {
    throw new FactoryError(
      'not_authorized',
      `This API key is limited to named factories and may not change the value of the team secret "${name}", which is not factory "${factory}"'s alone; an admin can, with \`factory secret update ${name}\`.`,
    );
  }
  return store.secrets.update(name, value).current_version;
}

/**
 * The longest grace of a graceful rotation: a month covers any provider's roll-over, and an old
 * value should not keep working long after everyone has forgotten it.
 */
export const MAX_GRACE_SECONDS = 30 * 86_400;

/** A webhook moved to the new version by a graceful rotation. */
export interface RotatedWebhook {
  uid: string;
  factory: string;
  name: string;
  secret_version: number;
  previous_secret_version: number | null;
  previous_secret_until: string | null;
}

/** What `PUT /api/v1/secrets/:name` answers: the secret, and with a grace, the webhooks moved and until when. */
export interface SecretUpdate {
  secret: SecretMeta;
  grace?: { seconds: number; until: string | null; webhooks: RotatedWebhook[] };
}

/**
 * Sets a new value of a team secret (docs/runtime.md#graceful-rotation). Without `graceSeconds`,
 * as always: webhooks stay bound to the version they have until they are re-applied or enabled.
 * With it, in the same transaction every live webhook bound to the secret moves to the new
 * version and keeps the version it had as its previous one, which still verifies for
 * `graceSeconds` (0: refused at once). One previous version at a time: a second graceful update
 * replaces the first one's.
 */
export function updateSecret(store: Store, name: string, value: string, options: { graceSeconds?: number; now: Date }): SecretUpdate {
  const { graceSeconds, now } = options;
  return store.transaction(() => {
    // A url_token webhook would take this value as the last segment of its URL, now (a graceful
    // update) or at its next enable or apply: refused before anything is written.
    if (!isUrlSafeToken(value)) {
      const bound = store.defs.listWebhooks().some((w) => w.secretName === name && w.authMode === 'url_token' && !w.deletedAt);
      if (bound) throw invalidRequest(notUrlSafe(name, 'a url_token webhook'), [{ pointer: '/value', message: `must be ${URL_TOKEN_RULE}` }]);
    }
    // A standard-webhooks webhook verifies only with a value that decodes to a signing key.
    if (!isSigningKey(value)) {
      const bound = store.defs.listWebhooks().some((w) => w.secretName === name && w.signatureScheme === 'standard-webhooks' && !w.deletedAt);
      if (bound) throw invalidRequest(notSigningKey(`The team secret "${name}"`, 'a standard-webhooks webhook'), [{ pointer: '/value', message: `must be ${SIGNING_KEY_RULE}` }]);
    }
    const secret = store.secrets.update(name, value);
    if (graceSeconds === undefined) return { secret };
    const until = graceSeconds > 0 ? iso(new Date(now.getTime() + graceSeconds * 1000)) : null;
    const webhooks: RotatedWebhook[] = [];
    for (const w of store.defs.listWebhooks()) {
      if (w.secretName !== name || w.secretVersion === null) continue;
      const previous = until === null ? null : w.secretVersion;
      const moved = store.defs.updateWebhook(w.uid, { secretVersion: secret.current_version, previousSecretVersion: previous, previousSecretUntil: until });
      webhooks.push({
        uid: moved.uid,
        factory: moved.factory,
        name: moved.name,
        secret_version: secret.current_version,
        previous_secret_version: previous,
        previous_secret_until: until,
      });
    }
    return { secret, grace: { seconds: graceSeconds, until, webhooks } };
  });
}

/** The sentence of a secret value that cannot be a url_token (docs/plan-apply.md, `secret.not_url_safe`). */
function notUrlSafe(name: string, user: string): string {
  return `The team secret "${name}" cannot be a url_token, which ${user} uses: it must be ${URL_TOKEN_RULE} (RFC 3986 unreserved).`;
}

/** The sentence of a value that cannot verify Standard Webhooks signatures (docs/plan-apply.md, `secret.not_signing_key`). */
function notSigningKey(subject: string, user: string): string {
  return `${subject} cannot verify the signatures of ${user}: it must be ${SIGNING_KEY_RULE}.`;
}

/** A secret given in a request for a standard-webhooks webhook (400 when it is no signing key). */
function refuseNonKeyValue(value: string, pointer: string): void {
  if (!isSigningKey(value)) throw invalidRequest(notSigningKey('The secret', 'a standard-webhooks webhook'), [{ pointer, message: `must be ${SIGNING_KEY_RULE}` }]);
}

/** A standard-webhooks webhook binds only an existing secret that decodes to a signing key (409 otherwise). */
function refuseNonKeySecret(store: Store, name: string, user: string): void {
  if (!isSigningKey(store.secrets.reveal(name) ?? '')) throw conflict(notSigningKey(`The team secret "${name}"`, user));
}

/** A url_token webhook binds only a value that can be the last segment of its URL as it is (409 otherwise). */
function refuseUnsafeUrlToken(store: Store, name: string, user: string): void {
  if (!isUrlSafeToken(store.secrets.reveal(name) ?? '')) throw conflict(notUrlSafe(name, user));
}

/** A webhook of `factory` may bind only a secret that factory may use (409 otherwise). */
function refuseBinding(meta: SecretMeta, factory: string): void {
  if (secretAllows(meta, factory)) return;
  throw conflict(
    `The team secret "${meta.name}" may not be used by factory "${factory}"; choose another secret_name, or ask an admin to run \`factory secret grant ${meta.name} --factory ${factory}\`.`,
  );
}

/** The one 404 sentence for a webhook that does not exist or belongs to a factory the key may not manage. */
export const unknownWebhookDetail = (uid: string) => `No webhook has the UID ${echoed(uid)}.`;

function live(store: Store, uid: string): WebhookRecord {
  const w = store.defs.getWebhookByUid(uid);
  if (!w || w.deletedAt) throw notFound(unknownWebhookDetail(uid));
  return w;
}

function refuseDefinitions(w: WebhookRecord): void {
  if (w.managedBy !== 'definitions') return;
  throw new FactoryError(
    'conflict',
    `The webhook "${w.name}" is managed by definitions: use \`factory secret update ${w.secretName}\`, then re-apply or disable and enable the webhook to bind the new value.`,
  );
}
