import { verifyBodyHex } from './body-hex.ts';
import type { SignatureSchemeImpl } from './types.ts';

/** Vercel (secondary sources): `x-vercel-signature: <hex HMAC-SHA1 of the body>`. */
export const vercel: SignatureSchemeImpl = {
  id: 'vercel',
  verify: (headers, body, secret) =>
    verifyBodyHex({ header: 'x-vercel-signature', prefix: '', algorithm: 'sha1' }, headers, body, secret),
  deliveryIdHeaders: [],
  signsTimestamp: false,
};
