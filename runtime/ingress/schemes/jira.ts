import { verifyBodyHex } from './body-hex.ts';
import type { SignatureSchemeImpl } from './types.ts';

/** Jira (secondary sources): `X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>`. */
export const jira: SignatureSchemeImpl = {
  id: 'jira',
  verify: (headers, body, secret) =>
    verifyBodyHex({ header: 'x-hub-signature', prefix: 'sha256=', algorithm: 'sha256' }, headers, body, secret),
  deliveryIdHeaders: ['x-atlassian-webhook-identifier'],
  signsTimestamp: false,
};
