// Automations (docs/automations.md, docs/dashboard.md): the list with its triggers and payload filters, and Test filter,
// which asks whether a stored delivery would start an automation.

import { $, api, badge, busy, dataTable, enc, h, showError } from './dom.js';
import { app, state } from './state.js';

export async function loadAutomations() {
  try {
    state.automations = (await api('GET', '/api/v1/automations')).automations;
    showError($('automations-error'));
  } catch (err) {
    state.automations = [];
    showError($('automations-error'), err);
  }
  renderAutomations();
}

export function renderAutomations() {
  const list = state.automations.filter((a) => !state.factory || a.factory === state.factory);
  const selected = $('t-automation').value;
  $('t-automation').replaceChildren(...list.map((a) => h('option', { value: `${a.factory}/${a.name}`, text: `${a.factory} / ${a.name}` })));
  if (list.some((a) => `${a.factory}/${a.name}` === selected)) $('t-automation').value = selected;
  if (!list.length) {
    $('automations-list').replaceChildren(h('p', { class: 'muted', text: 'No automations.' }));
    return;
  }
  const rows = list.map((a) =>
    h(
      'tr',
      {},
      h('td', {}, h('strong', { text: a.name }), a.title ? h('div', { class: 'muted small', text: a.title }) : null),
      h('td', { text: a.factory }),
      h('td', {}, a.enabled ? badge('enabled', 'ok') : badge('disabled', 'neutral'), a.silent ? h('div', {}, badge('silent', 'bad'), h('div', { class: 'muted small', text: a.silent_reason })) : null),
      h('td', { text: a.environment }),
      h(
        'td',
        {},
        h('ul', { class: 'plain' }, a.triggers.map((t) => h('li', {}, `${t.webhook_name ?? '(unknown)'} `, h('code', { class: 'small', text: t.webhook_uid ?? '' }), ` ${t.webhook_state}`, t.payload ? h('pre', { class: 'small', text: JSON.stringify(t.payload, null, 2) }) : h('div', { class: 'muted small', text: 'no payload filter' })))),
      ),
    ),
  );
  $('automations-list').replaceChildren(
    dataTable(['Name', 'Factory', 'State', 'Environment', 'Triggers (webhook, payload filter)'], rows),
  );
}

export function prefillTest(w, d) {
  const a = state.automations.find((x) => x.factory === w.factory && x.triggers.some((t) => t.webhook_uid === w.uid));
  if (state.factory && state.factory !== w.factory) app.selectFactory(w.factory);
  if (a) $('t-automation').value = `${a.factory}/${a.name}`;
  $('t-delivery').value = d.delivery_id;
  $('t-webhook').value = w.uid;
  $('test-result').replaceChildren();
  $('test-form').scrollIntoView({ block: 'start' });
  $('t-automation').focus();
}

$('test-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const [factory, name] = $('t-automation').value.split('/');
  if (!factory || !name) return showError($('test-error'), 'Choose an automation first.');
  const body = { delivery_id: $('t-delivery').value.trim() };
  if ($('t-webhook').value.trim()) body.webhook_uid = $('t-webhook').value.trim();
  await busy(e.currentTarget.querySelector('button[type=submit]'), async () => {
    try {
      const r = await api('POST', `/api/v1/automations/${enc(factory)}/${enc(name)}/test`, body);
      showError($('test-error'));
      renderTestResult(r);
    } catch (err) {
      $('test-result').replaceChildren();
      showError($('test-error'), err);
    }
  });
});

function renderTestResult(r) {
  const check = (label, c) =>
    h('li', {}, badge(c.passed ? 'pass' : 'fail', c.passed ? 'ok' : 'bad'), ` ${label}: ${c.detail}`,
      c.path !== undefined ? h('div', { class: 'small' }, 'Key path: ', h('code', { text: c.path || '(the body)' })) : null,
      c.reason ? h('div', { class: 'small', text: `Reason: ${c.reason}` }) : null);
  $('test-result').replaceChildren(
    ...[
    h('p', { class: `verdict ${r.would_trigger ? 'ok' : 'bad'}`, text: r.would_trigger ? 'Would trigger' : 'Would not trigger' }),
    h('p', { class: 'muted small', text: `${r.automation.factory} / ${r.automation.name} against delivery ${r.delivery.delivery_id} of ${r.delivery.webhook_name ?? ''} (${r.delivery.webhook_uid}), received ${r.delivery.received_at}` }),
    h('ul', { class: 'plain' }, check('Webhook check', r.webhook_check), check('Payload check', r.payload_check)),
    r.automation_enabled ? null : h('p', { class: 'small', text: 'The automation is disabled.' }),
    r.note ? h('p', { class: 'small', text: r.note }) : null,
    ].filter(Boolean),
  );
}

$('automations-refresh').addEventListener('click', (e) => busy(e.currentTarget, async () => {
  await loadAutomations();
  app.renderFactories();
}));
