import { verifyBodyHex } from './body-hex.ts';
import type { SignatureSchemeImpl } from './types.ts';

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
 * https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 */
export const github: SignatureSchemeImpl = {
  id: 'github',
  verify: (headers, body, secret) =>
    verifyBodyHex({ header: 'x-hub-signature-256', prefix: 'sha256=', algorithm: 'sha256' }, headers, body, secret),
  deliveryIdHeaders: ['x-github-delivery'],
  signsTimestamp: false,
};
