import { verifyBodyHex } from './body-hex.ts';
import type { SignatureSchemeImpl } from './types.ts';

/**
 * Sentry integration platform: `Sentry-Hook-Signature: <hex HMAC-SHA256 of the body>`, no prefix.
 * No stable delivery id (`Request-ID` changes per send), so identity falls back
 * (docs/ingress.md#identity).
 */
export const sentry: SignatureSchemeImpl = {
  id: 'sentry',
  verify: (headers, body, secret) =>
    verifyBodyHex({ header: 'sentry-hook-signature', prefix: '', algorithm: 'sha256' }, headers, body, secret),
  deliveryIdHeaders: [],
  signsTimestamp: false,
};
