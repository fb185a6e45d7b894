// What the dashboard shows (docs/dashboard.md), shared by its area modules, and the few reactions that
// cross areas.

/** Shared with the session page (/sessions/<run_id>), so a run link opened in this tab is signed in too. */
export const KEY_STORAGE = 'factory.apiKey';

export const state = {
  webhooks: [],
  webhooksForbidden: false, // GET /api/v1/webhooks answered 403: the key has no manage scope
  automations: [],
  schedules: [], // GET /api/v1/agent/schedules: the automations' schedule triggers
  factory: null, // the selected factory, or null for all
  deliveries: { webhook: null, cursor: null },
  runs: { cursor: null },
  runsForbidden: null, // GET /api/v1/agent/runs answered 403 (true), a list (false), or not yet (null)
  transcript: { runId: null, after: 0, timer: null },
};

/**
 * Sign-out and the factory list live in app.js but are triggered from the areas (a 401 from any
 * call, a webhook created or deleted, Test filter for another factory). app.js sets these at
 * start, so no module imports app.js and the imports stay a tree without cycles.
 */
export const app = {
  /** Forgets the key and every piece of data shown with it. */
  signOut: (_message) => {},
  /** Redraws the factory list after the webhooks or automations changed. */
  renderFactories: () => {},
  /** Narrows every section to one factory (null: all). */
  selectFactory: (_name) => {},
};
