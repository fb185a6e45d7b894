import type { WebhookRecord } from './state.ts';

/**
 * How the management API shows definitions (docs/api.md: snake_case JSON, RFC 3339 times). Pure, so
 * the webhook routes of ingress and of definitions show a webhook the same way.
 */

/** The webhook JSON of the management API. Never a secret value: only its name and bound version. */
export interface WebhookView {
  uid: string;
  name: string;
  factory: string;
  url: string;
  auth_mode: string;
  signature_scheme: string | null;
  enabled: boolean;
  secret_name: string;
  /** The bound secret version; null while the secret is pending. */
  secret_version: number | null;
  /**
   * During a graceful rotation (docs/runtime.md#graceful-rotation), the version bound before, which
   * still verifies until `previous_secret_until`; both null otherwise.
   */
  previous_secret_version: number | null;
  previous_secret_until: string | null;
  delivery_id_header: string | null;
  description: string | null;
  managed_by: string;
  source_file: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/**
 * The ingress URL a sender posts to (docs/ingress.md#the-pipeline-step-by-step). For url_token the
 * token goes in the last segment; we show the `{token}` placeholder, never the token itself.
 */
export function webhookUrl(baseUrl: string, uid: string, authMode: string): string {
  const url = `${baseUrl.replace(/\/+$/, '')}/webhooks/w/${uid}`;
  return authMode === 'url_token' ? `${url}/{token}` : url;
}

export function webhookView(w: WebhookRecord, baseUrl: string): WebhookView {
  return {
    uid: w.uid,
    name: w.name,
    factory: w.factory,
    url: webhookUrl(baseUrl, w.uid, w.authMode),
    auth_mode: w.authMode,
    signature_scheme: w.signatureScheme,
    enabled: w.enabled,
    secret_name: w.secretName,
    secret_version: w.secretVersion,
    previous_secret_version: w.previousSecretVersion ?? null,
    previous_secret_until: w.previousSecretUntil ?? null,
    delivery_id_header: w.deliveryIdHeader,
    description: w.description,
    managed_by: w.managedBy,
    source_file: w.sourceFile,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
    deleted_at: w.deletedAt,
  };
}
