// Automations (docs/automations.md, docs/dashboard.md): the list with its triggers and payload filters, its
// schedules with Pause and Resume, and Test filter, which asks whether a stored delivery would start an automation.

import { $, api, badge, busy, dataTable, enc, h, isStale, showError } from './dom.js';
import { app, state } from './state.js';

export async function loadAutomations() {
  try {
    const [automations, schedules] = await Promise.all([api('GET', '/api/v1/automations'), api('GET', '/api/v1/agent/schedules')]);
    state.automations = automations.automations;
    state.schedules = schedules.schedules;
    showError($('automations-error'));
  } catch (err) {
    if (isStale(err)) return;
    state.automations = [];
    state.schedules = [];
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
      h('td', {}, scheduleList(state.schedules.filter((s) => s.factory === a.factory && s.automation === a.name))),
    ),
  );
  $('automations-list').replaceChildren(
    dataTable(['Name', 'Factory', 'State', 'Environment', 'Triggers (webhook, payload filter)', 'Schedules (UTC)'], rows),
  );
}

/** `2026-03-02 09:00 UTC`: cron is UTC (docs/definitions.md#schedules), so the times are shown in UTC too, not local time. */
const utc = (t) => h('time', { datetime: t, title: t, text: t.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC') });

function scheduleList(schedules) {
  if (!schedules.length) return h('span', { class: 'muted', text: '—' });
  return h('ul', { class: 'plain' }, schedules.map((s) => {
    const verb = s.paused ? 'Resume' : 'Pause';
    const button = h('button', { type: 'button', 'aria-label': `${verb} schedule ${s.name}`, text: verb });
    button.addEventListener('click', () => busy(button, async () => {
      try {
        if (s.paused) await api('POST', `/api/v1/agent/schedules/${enc(s.id)}/resume`);
        else await api('POST', `/api/v1/agent/schedules/${enc(s.id)}/pause`);
        await loadAutomations();
      } catch (err) {
        showError($('automations-error'), err);
      }
    }));
    const next = s.paused
      ? h('div', { class: 'small' }, badge('paused', 'neutral'), ` by ${s.paused.by} at `, utc(s.paused.at))
      : h('div', { class: 'small' }, 'Next: ', s.history.next_run ? utc(s.history.next_run) : 'not armed (the automation is disabled)');
    return h(
      'li',
      { 'aria-label': `Schedule ${s.name}` },
      h('strong', { text: s.name }), ' ', h('code', { text: s.cron_schedule }), ' ', button,
      next,
      h('div', { class: 'small' }, 'Last run: ', s.history.last_ran ? utc(s.history.last_ran) : 'never'),
    );
  }));
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
      if (isStale(err)) return;
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
