// Runs and their transcripts (docs/api.md, docs/dashboard.md): newest first, narrowed by factory and state, with the
// transcript followed in place until the run finishes.

import { $, api, badge, busy, dataTable, enc, fmtTime, h, isStale, latestOnly, runtimeUrl, showError } from './dom.js';
import { state } from './state.js';
import { renderEvent, visible } from './transcript.js';

export const stateKind = (s) => ({ SUCCEEDED: 'ok', FAILED: 'bad', ERROR: 'bad', CANCELLED: 'neutral', QUEUED: 'neutral', INPROGRESS: 'busy' })[s] ?? '';
export const runLink = (id) =>
  h('a', {
    href: runtimeUrl(`/sessions/${enc(id)}`),
    class: 'mono',
    text: id,
    onclick: (e) => {
      // A click with Ctrl/Cmd/Shift/Alt or another button is the browser's: a new tab or window for the session page.
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      openTranscript(id);
    },
  });

/** Only the latest load draws: not a slow answer for a factory or state the user has since left, nor an older page. */
const runsLoads = latestOnly();

export async function loadRuns(more) {
  const load = runsLoads.start();
  // "Older runs" continues the list on screen only; while a new one loads there is none to continue.
  if (!more) $('runs-more').hidden = true;
  const q = new URLSearchParams({ limit: '20' });
  if (state.factory) q.set('factory', state.factory);
  if ($('runs-state').value) q.set('state', $('runs-state').value);
  if (more && state.runs.cursor) q.set('cursor', state.runs.cursor);
  try {
    const page = await api('GET', `/api/v1/agent/runs?${q}`);
    if (!runsLoads.isLatest(load)) return;
    state.runsForbidden = false;
    showError($('runs-error'));
    const rows = page.runs.map(runRow);
    const tbody = $('runs-list').querySelector('tbody');
    if (more && tbody) tbody.append(...rows);
    else if (!rows.length) $('runs-list').replaceChildren(h('p', { class: 'muted', text: 'No runs.' }));
    else $('runs-list').replaceChildren(dataTable(['Run', 'State', 'Title', 'Started by', 'Created', 'Actions'], rows));
    state.runs.cursor = page.page_info.next_cursor;
    $('runs-more').hidden = !page.page_info.has_next_page;
  } catch (err) {
    if (isStale(err) || !runsLoads.isLatest(load)) return;
    state.runsForbidden = err.status === 403;
    $('runs-list').replaceChildren();
    $('runs-more').hidden = true;
    showError($('runs-error'), err);
  }
}

/** A row of the runs table; its title, status message and origin read as in the transcript (visible). */
function runRow(r) {
  const origin = r.source === 'WEBHOOK' ? `${r.factory ?? ''} / ${r.automation ?? ''} (delivery ${r.delivery_id ?? ''})` : `${r.creator?.type ?? ''} ${r.creator?.name ?? ''}`;
  const cancellable = r.state === 'QUEUED' || r.state === 'INPROGRESS';
  return h(
    'tr',
    {},
    h('td', {}, runLink(r.run_id)),
    h('td', {}, badge(r.state, stateKind(r.state)), r.status_message ? h('div', { class: 'muted small', text: visible(r.status_message) }) : null),
    h('td', { text: visible(r.title ?? '') }),
    h('td', { class: 'break-any' }, h('span', { class: 'small', text: visible(origin) })),
    h('td', {}, fmtTime(r.created_at)),
    h('td', {}, h('div', { class: 'actions' },
      h('button', { type: 'button', text: 'Transcript', onclick: () => openTranscript(r.run_id) }),
      cancellable ? h('button', { type: 'button', class: 'danger', text: 'Cancel', onclick: (e) => cancelRun(r, e.currentTarget) }) : null)),
  );
}

async function cancelRun(r, button) {
  if (!confirm(`Cancel the run ${r.run_id}?`)) return;
  await busy(button, async () => {
    try {
      await api('POST', `/api/v1/agent/runs/${enc(r.run_id)}/cancel`);
      await loadRuns(false);
    } catch (err) {
      showError($('runs-error'), err);
    }
  });
}

$('runs-refresh').addEventListener('click', (e) => busy(e.currentTarget, () => loadRuns(false)));
$('runs-more').addEventListener('click', (e) => busy(e.currentTarget, () => loadRuns(true)));
$('runs-state').addEventListener('change', () => loadRuns(false));

export function stopTranscript() {
  clearTimeout(state.transcript.timer);
  state.transcript = { runId: null, after: 0, timer: null };
}

function openTranscript(runId) {
  stopTranscript();
  state.transcript.runId = runId;
  $('transcript-h').textContent = `Transcript of ${runId}`;
  $('transcript-link').href = runtimeUrl(`/sessions/${enc(runId)}`);
  $('transcript-events').replaceChildren();
  $('transcript-state').textContent = '';
  $('notifications').hidden = true;
  $('notifications-target').replaceChildren();
  $('notifications-list').replaceChildren();
  showError($('transcript-error'));
  $('transcript').hidden = false;
  $('transcript').scrollIntoView({ block: 'start' });
  pollTranscript(runId);
}

/** A poll that may succeed later: no answer, too many requests, or a server error (a restart). */
const passing = (err) => err?.status === 0 || err?.status === 429 || err?.status >= 500;

/**
 * Reads the transcript from where it stopped and the run's notifications; while the run is not
 * finished or a notification is still pending (retries outlive the run), again every 2 s. A poll
 * that fails for a reason that may pass (no answer, a 429 or 5xx) is shown with when it is tried
 * again, each time a little later (`retry`, doubled up to 30 s); the next poll that succeeds clears
 * the error. Any other error (the run is gone, the key lacks the scope) ends the following.
 */
async function pollTranscript(runId, retry = 2000) {
  try {
    const run = await api('GET', `/api/v1/agent/runs/${enc(runId)}`);
    if (state.transcript.runId !== runId) return;
    renderNotifications(run);
    for (;;) {
      if (state.transcript.runId !== runId) return;
      const t = await api('GET', `/api/v1/agent/runs/${enc(runId)}/transcript?after=${state.transcript.after}`);
      if (state.transcript.runId !== runId) return;
      showError($('transcript-error'));
      $('transcript-events').append(...t.events.map(renderEvent));
      state.transcript.after = t.next_after;
      $('transcript-state').textContent = visible(`${t.state}${run.status_message ? ` — ${run.status_message}` : ''} · created ${run.created_at}`);
      if (t.has_more) continue;
      const pending = (run.notifications ?? []).some((n) => n.status === 'pending');
      if (!t.finished || pending) state.transcript.timer = setTimeout(() => pollTranscript(runId), 2000);
      return;
    }
  } catch (err) {
    if (isStale(err) || state.transcript.runId !== runId) return;
    showError($('transcript-error'), err);
    if (!passing(err)) return;
    $('transcript-error').append(` Trying again in ${retry / 1000} s.`);
    state.transcript.timer = setTimeout(() => pollTranscript(runId, Math.min(retry * 2, 30_000)), retry);
  }
}

const notificationKind = (s) => ({ delivered: 'ok', failed: 'bad', pending: 'busy' })[s] ?? '';

/**
 * The run's state-change notifications (docs/api.md#run-notifications): where they go, and each
 * one with its attempts. The run view never holds the signing secret, so nothing here can show it.
 */
function renderNotifications(run) {
  if (!run.webhook) {
    $('notifications').hidden = true;
    return;
  }
  $('notifications-target').replaceChildren(
    'Sent to ',
    h('span', { class: 'mono break-any', text: run.webhook.url }),
    run.webhook.secret_name ? ` · signed with the secret ${run.webhook.secret_name}` : '',
  );
  const list = run.notifications ?? [];
  $('notifications-list').replaceChildren(
    ...(list.length ? list.map(notificationItem) : [h('p', { class: 'muted small', text: 'No state change to report yet.' })]),
  );
  $('notifications').hidden = false;
}

function notificationItem(n) {
  const rows = n.attempts.map((a) =>
    h('tr', {},
      h('td', { text: String(a.attempt) }),
      h('td', {}, fmtTime(a.at)),
      h('td', { text: [a.status_code !== null && a.status_code !== undefined ? `HTTP ${a.status_code}` : '', a.error ?? ''].filter(Boolean).join(' — ') })),
  );
  return h('article', { class: 'delivery', 'aria-label': `${n.state} notification` },
    h('div', { class: 'line' },
      h('strong', { text: n.state }),
      badge(n.status, notificationKind(n.status)),
      h('span', { class: 'mono small muted break-any', text: n.message_id }),
      n.next_attempt_at ? h('span', { class: 'small' }, 'next attempt ', fmtTime(n.next_attempt_at)) : null),
    rows.length ? dataTable(['Attempt', 'Time', 'Result'], rows) : h('p', { class: 'muted small', text: 'Not sent yet.' }),
  );
}

$('transcript-close').addEventListener('click', () => {
  stopTranscript();
  $('transcript').hidden = true;
});
