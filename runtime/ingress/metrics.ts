/**
 * In-memory ingress counters. 404, 405 and 429 are not deliveries and are not logged
 * (SPEC 7.1); they are counted here instead, along with the logged outcomes.
 */
export interface IngressMetrics {
  method_not_allowed: number;
  not_found: number;
  rate_limited: number;
  accepted: number;
  duplicate: number;
  rejected_auth: number;
  rejected_invalid_json: number;
  rejected_too_large: number;
  /** Requests whose body stream broke before it ended (client went away); also counted and logged as rejected_invalid_json. */
  aborted: number;
}

export function newIngressMetrics(): IngressMetrics {
  return {
    method_not_allowed: 0,
    not_found: 0,
    rate_limited: 0,
    accepted: 0,
    duplicate: 0,
    rejected_auth: 0,
    rejected_invalid_json: 0,
    rejected_too_large: 0,
    aborted: 0,
  };
}
