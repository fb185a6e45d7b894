import type { SignatureScheme } from '../../../core/snapshot.ts';
import { bitbucket } from './bitbucket.ts';
import { github } from './github.ts';
import { gitlab } from './gitlab.ts';
import { jira } from './jira.ts';
import { linear } from './linear.ts';
import { netlify } from './netlify.ts';
import { paddle } from './paddle.ts';
import { pagerduty } from './pagerduty.ts';
import { rootly } from './rootly.ts';
import { sentry } from './sentry.ts';
import { shopify } from './shopify.ts';
import { slack } from './slack.ts';
import { standardWebhooks } from './standard-webhooks.ts';
import { stripe } from './stripe.ts';
import type { SignatureSchemeImpl } from './types.ts';
import { vercel } from './vercel.ts';

/** The 15 provider signature schemes, by scheme id. docs/signatures.md lists them. */
export const SCHEMES: Readonly<Record<SignatureScheme, SignatureSchemeImpl>> = Object.freeze({
  'standard-webhooks': standardWebhooks,
  github,
  gitlab,
  bitbucket,
  stripe,
  shopify,
  paddle,
  sentry,
  vercel,
  netlify,
  pagerduty,
  rootly,
  linear,
  slack,
  jira,
});

export { SIGNATURE_TOLERANCE_SECONDS } from './timestamp.ts';
export { headersFrom } from './types.ts';
export type { Handshake, Headers, SchemeFailure, SignatureSchemeImpl, VerifyResult } from './types.ts';
