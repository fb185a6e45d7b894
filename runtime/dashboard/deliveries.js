// Deliveries of one webhook (docs/ingress.md#delivery-log, docs/dashboard.md): newest first, a page at a time, with the payload of
// Accepted entries and a way into Test filter.

import { prefillTest } from './automations.js';
import { $, api, badge, busy, enc, fmtSize, fmtTime, h, isStale, latestOnly, showError } from './dom.js';
import { runLink, stateKind } from './runs.js';
import { state } from './state.js';

export function openDeliveries(w) {
  state.deliveries = { webhook: w, cursor: null };
  $('deliveries-h').textContent = `Deliveries of ${w.name} (${w.uid})`;
  $('deliveries-list').replaceChildren();
  $('deliveries').hidden = false;
  $('deliveries').scrollIntoView({ block: 'start' });
  loadDeliveries(false);
}

/** Only the latest load draws: not a slow answer for a webhook the user has since left, nor an older page of it. */
const deliveriesLoads = latestOnly();

async function loadDeliveries(more) {
  const w = state.deliveries.webhook;
  if (!w) return;
  const load = deliveriesLoads.start();
  if (!more) {
    state.deliveries.cursor = null;
    // "Older deliveries" continues the list on screen only; while a new one loads there is none to continue.
    $('deliveries-more').hidden = true;
  }
  const q = new URLSearchParams({ limit: '20' });
  if (more && state.deliveries.cursor) q.set('cursor', state.deliveries.cursor);
  try {
    const page = await api('GET', `/api/v1/webhooks/${enc(w.uid)}/deliveries?${q}`);
    if (!deliveriesLoads.isLatest(load) || state.deliveries.webhook !== w) return;
    showError($('deliveries-error'));
    const items = page.deliveries.map((d) => deliveryItem(w, d));
    if (more) $('deliveries-list').append(...items);
    else $('deliveries-list').replaceChildren(...(items.length ? items : [h('p', { class: 'muted', text: 'No deliveries in the log.' })]));
    state.deliveries.cursor = page.page_info.next_cursor;
    $('deliveries-more').hidden = !page.page_info.has_next_page;
  } catch (err) {
    if (deliveriesLoads.isLatest(load) && state.deliveries.webhook === w) showError($('deliveries-error'), err);
  }
}

/**
 * The payload laid out for reading. JSON.stringify recurses, so a payload nested thousands of
 * levels deep (valid JSON, which the ingress accepts: docs/ingress.md) throws RangeError; then it
 * is shown compactly, and when that overflows too, as a one-line note with its size.
 */
function payloadView(payload, size) {
  for (const indent of [2, undefined]) {
    try {
      return h('pre', { text: JSON.stringify(payload, null, indent) });
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
    }
  }
  return h('p', { class: 'muted small', text: `This payload (${fmtSize(size)}) is nested too deeply to show here.` });
}

function deliveryItem(w, d) {
  const kind = d.outcome === 'accepted' ? 'ok' : d.outcome === 'duplicate' ? 'neutral' : 'bad';
  const payloadBox = h('div', { class: 'payload' });
  const runs = d.runs.length
    ? h('ul', { class: 'runs-started' }, d.runs.map((r) => h('li', {}, runLink(r.run_id), ' ', badge(r.state, stateKind(r.state)), r.automation ? ` automation ${r.automation}` : '', r.replay ? h('span', { class: 'muted small', text: ` replayed by ${r.replay.by.name}` }) : '')))
    : d.outcome === 'accepted'
      ? h('p', { class: 'muted small', text: 'Started no run (no enabled automation matched).' })
      : null;
  const showPayload = d.has_payload
    ? h('button', {
        type: 'button',
        text: 'Show payload',
        'aria-expanded': 'false',
        onclick: async (e) => {
          const button = e.currentTarget;
          if (button.getAttribute('aria-expanded') === 'true') {
            payloadBox.replaceChildren();
            button.setAttribute('aria-expanded', 'false');
            button.textContent = 'Show payload';
            return;
          }
          await busy(button, async () => {
            try {
              const full = await api('GET', `/api/v1/webhooks/${enc(w.uid)}/deliveries/${enc(d.delivery_id)}`);
              payloadBox.replaceChildren(payloadView(full.payload, full.size));
              button.setAttribute('aria-expanded', 'true');
              button.textContent = 'Hide payload';
            } catch (err) {
              if (isStale(err)) return;
              payloadBox.replaceChildren(h('p', { class: 'error' }));
              showError(payloadBox.firstChild, err);
            }
          });
        },
      })
    : null;
  const test = d.outcome === 'accepted' ? h('button', { type: 'button', text: 'Test filter…', onclick: () => prefillTest(w, d) }) : null;
  // Replay (docs/ingress.md#replay): only an Accepted entry whose payload is still stored, and
  // not a provider handshake, which starts no run (docs/signatures.md#handshakes).
  const replayNote = h('p', { class: 'small', role: 'status' });
  const handshake = typeof d.reason === 'string' && d.reason.startsWith('handshake: ');
  const replay =
    d.outcome === 'accepted' && d.has_payload && !handshake
      ? h('button', {
          type: 'button',
          text: 'Replay',
          title: 'Start runs again from this payload, for the automations that match it now',
          onclick: (e) =>
            busy(e.currentTarget, async () => {
              try {
                const out = await api('POST', `/api/v1/webhooks/${enc(w.uid)}/deliveries/${enc(d.delivery_id)}/replay`, {});
                showError($('deliveries-error'));
                if (!out.runs.length) return void (replayNote.textContent = out.detail ?? 'No automation matches this delivery now.');
                await loadDeliveries(false);
              } catch (err) {
                if (isStale(err)) return;
                replayNote.className = 'error small';
                showError(replayNote, err);
              }
            }),
        })
      : null;
  return h(
    'article',
    { class: 'delivery' },
    h('div', { class: 'line' }, badge(d.outcome_label, kind), h('code', { class: 'break-any', text: d.delivery_id }), h('span', { class: 'muted', text: fmtSize(d.size) }), fmtTime(d.received_at), d.sender ? h('span', { class: 'muted small', text: `from ${d.sender}` }) : null),
    d.reason ? h('p', { class: 'muted small', text: d.reason }) : null,
    runs,
    h('div', { class: 'actions' }, showPayload, test, replay),
    replayNote,
    payloadBox,
  );
}

$('deliveries-refresh').addEventListener('click', (e) => busy(e.currentTarget, () => loadDeliveries(false)));
$('deliveries-more').addEventListener('click', (e) => busy(e.currentTarget, () => loadDeliveries(true)));
$('deliveries-close').addEventListener('click', () => {
  $('deliveries').hidden = true;
  state.deliveries = { webhook: null, cursor: null };
});
