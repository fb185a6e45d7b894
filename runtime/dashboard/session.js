// The session page (/sessions/<run_id>, docs/api.md): asks for an API key once (kept in this tab, shared
// with the dashboard), then shows the run's transcript from the API, following it until the run
// ends. Every value is rendered with textContent (transcript.js).

import { $, api, enc } from './dom.js';
import { KEY_STORAGE } from './state.js';
import { renderEvent } from './transcript.js';

const id = decodeURIComponent(location.pathname.split('/').pop());
let after = 0;

async function load() {
  let run;
  try {
    run = await api('GET', `/api/v1/agent/runs/${enc(id)}`);
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      sessionStorage.removeItem(KEY_STORAGE);
      $('login').hidden = false;
    }
    $('err').textContent = err.message;
    return;
  }
  $('title').textContent = run.title || run.run_id;
  const summary = (state) => `${state}${run.status_message ? ` — ${run.status_message}` : ''} · created ${run.created_at}`;
  $('state').textContent = summary(run.state);
  for (;;) {
    const t = await api('GET', `/api/v1/agent/runs/${enc(id)}/transcript?after=${after}`);
    $('events').append(...t.events.map(renderEvent));
    after = t.next_after;
    if (t.has_more) continue;
    if (t.finished) $('state').textContent = summary(t.state);
    else setTimeout(load, 2000);
    return;
  }
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY_STORAGE, $('key').value.trim());
  $('login').hidden = true;
  $('err').textContent = '';
  load().catch((err) => ($('err').textContent = String(err?.message ?? err)));
});
if (sessionStorage.getItem(KEY_STORAGE)) load().catch((err) => ($('err').textContent = String(err?.message ?? err)));
else $('login').hidden = false;
