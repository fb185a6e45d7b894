// The session page (/sessions/<run_id>, docs/api.md): asks for an API key once (kept in this tab, shared
// with the dashboard), then shows the run's transcript from the API, following it until the run
// ends. Every value is rendered with textContent (transcript.js).

import { $, api, enc, takeKey } from './dom.js';
import { KEY_STORAGE } from './state.js';
import { renderEvent, visible } from './transcript.js';

const raw = location.pathname.split('/').pop();
/** The run id from the address, or null when its %-escapes do not decode (decodeURIComponent throws). */
const id = (() => {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
})();
let after = 0;

/** Reads the run and its transcript from where it stopped; true once the run has ended. */
async function load() {
  const run = await api('GET', `/api/v1/agent/runs/${enc(id)}`);
  $('title').textContent = visible(run.title || run.run_id);
  const summary = (state) => visible(`${state}${run.status_message ? ` — ${run.status_message}` : ''} · created ${run.created_at}`);
  $('state').textContent = summary(run.state);
  for (;;) {
    const t = await api('GET', `/api/v1/agent/runs/${enc(id)}/transcript?after=${after}`);
    $('events').append(...t.events.map(renderEvent));
    after = t.next_after;
    if (t.has_more) continue;
    if (t.finished) $('state').textContent = summary(t.state);
    return t.finished;
  }
}

/**
 * Follows the run every 2 s until it ends. A failed poll is shown and tried again, each time a
 * little later (up to 30 s), so a runtime restart or a dropped connection does not end the page's
 * view; the next poll that succeeds clears the error. A key the runtime refuses (401) is forgotten
 * and another asked for; a key without the runs scope (403) is kept, and another may be entered.
 */
async function follow(retry = 2000) {
  let finished;
  try {
    finished = await load();
  } catch (err) {
    $('err').textContent = String(err?.message ?? err);
    if (err?.status === 401) {
      sessionStorage.removeItem(KEY_STORAGE);
      $('login').hidden = false;
    } else if (err?.status === 403) {
      // The key is valid but lacks the runs scope: another key may be entered here, but this one
      // stays stored for the dashboard, which shares it (signing it out would surprise its user).
      $('login').hidden = false;
    } else if (err?.status === 0 || err?.status === 429 || err?.status >= 500) {
      setTimeout(() => follow(Math.min(retry * 2, 30_000)), retry);
    }
    return;
  }
  $('err').textContent = '';
  if (!finished) setTimeout(follow, 2000);
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  if (takeKey('key', 'err') === null) return;
  $('login').hidden = true;
  $('err').textContent = '';
  follow();
});
if (id === null) $('err').textContent = `This address does not name a run: “${raw}” is not a run id.`;
else if (sessionStorage.getItem(KEY_STORAGE)) follow();
else $('login').hidden = false;
