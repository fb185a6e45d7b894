import { verifyBodyHex } from './body-hex.ts';
import type { SignatureSchemeImpl } from './types.ts';

/**
 * Bitbucket Cloud (secondary sources): `X-Hub-Signature: sha256=<hex>` of the body. SHA-256
 * under GitHub's legacy SHA-1 header name; the SHA-1 form is not accepted.
 */
export const bitbucket: SignatureSchemeImpl = {
  id: 'bitbucket',
  verify: (headers, body, secret) =>
    verifyBodyHex({ header: 'x-hub-signature', prefix: 'sha256=', algorithm: 'sha256' }, headers, body, secret),
  deliveryIdHeaders: ['x-request-uuid'],
  signsTimestamp: false,
};
