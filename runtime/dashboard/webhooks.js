// Webhooks (docs/dashboard.md): the list with its actions, the secret shown once, and the create form.

import { $, api, busy, copyField, dataTable, enc, h, isStale, showError } from './dom.js';
import { openDeliveries } from './deliveries.js';
import { app, state } from './state.js';

/** docs/signatures.md; test/runtime/routes/dashboard.test.ts checks this list against core/snapshot.ts. */
const SIGNATURE_SCHEMES = ['standard-webhooks', 'github', 'gitlab', 'bitbucket', 'stripe', 'shopify', 'paddle', 'sentry', 'vercel', 'netlify', 'pagerduty', 'rootly', 'linear', 'slack', 'jira'];

export async function loadWebhooks() {
  try {
    state.webhooks = (await api('GET', '/api/v1/webhooks')).webhooks;
    state.webhooksForbidden = false;
    showError($('webhooks-error'));
  } catch (err) {
    if (isStale(err)) return;
    state.webhooks = [];
    state.webhooksForbidden = err.status === 403;
    showError($('webhooks-error'), err);
  }
  renderWebhooks();
}

export function renderWebhooks() {
  const hooks = state.webhooks.filter((w) => !state.factory || w.factory === state.factory);
  if (!hooks.length) {
    $('webhooks-list').replaceChildren(h('p', { class: 'muted', text: 'No webhooks.' }));
    return;
  }
  const rows = hooks.map((w) => {
    const managedNote =
      w.managed_by === 'definitions'
        ? h('p', { class: 'muted small', text: `Managed by definitions (${w.source_file ?? `webhooks/${w.name}.yaml`}): edits come from the file and factory apply.` })
        : null;
    const toggle = h('input', { type: 'checkbox', id: `en-${w.uid}`, checked: w.enabled });
    toggle.addEventListener('change', () => setEnabled(w, toggle));
    // A definitions-managed webhook's secret and existence come from its file (docs/ingress.md#webhook-lifecycle: rotate,
    // set-secret and delete answer 409), so only what works is offered, plus how to rotate.
    const managed = w.managed_by === 'definitions';
    const actions = managed
      ? [
          h('button', { type: 'button', text: 'Deliveries', onclick: () => openDeliveries(w) }),
          h('p', { class: 'muted small', text: `To rotate: factory secret update ${w.secret_name}, then re-apply or toggle Enabled.` }),
        ]
      : [
          h('button', { type: 'button', text: 'Deliveries', onclick: () => openDeliveries(w) }),
          h('button', { type: 'button', text: 'Rotate', onclick: (e) => rotate(w, e.currentTarget) }),
          w.auth_mode === 'signature' ? h('button', { type: 'button', text: 'Set secret', onclick: (e) => setSecret(w, e.currentTarget) }) : null,
          h('button', { type: 'button', class: 'danger', text: 'Delete', onclick: (e) => remove(w, e.currentTarget) }),
        ];
    return h(
      'tr',
      {},
      h('td', {}, h('strong', { text: w.name }), w.description ? h('div', { class: 'muted small', text: w.description }) : null, managedNote),
      h('td', { text: w.factory }),
      h('td', {}, copyField(`${w.name} URL`, w.url, { wrap: true })),
      h('td', {}, w.auth_mode, w.signature_scheme ? h('div', { class: 'muted small', text: w.signature_scheme }) : null, w.delivery_id_header ? h('div', { class: 'muted small', text: `id header: ${w.delivery_id_header}` }) : null),
      h('td', {}, h('span', { class: 'mono small', text: w.secret_name }), h('div', { class: 'muted small', text: w.secret_version === null ? 'no value yet' : `version ${w.secret_version}` })),
      h('td', {}, h('label', { class: 'switch', for: `en-${w.uid}` }, toggle, ' Enabled')),
      h('td', {}, h('div', { class: 'actions' }, actions)),
    );
  });
  $('webhooks-list').replaceChildren(
    dataTable(['Name', 'Factory', 'URL', 'Mode', 'Secret', 'State', 'Actions'], rows),
  );
}

/** Shows a generated secret (and a url_token URL, which holds it) once; next steps in words. */
function showResult(result, what) {
  showError($('webhooks-error'));
  $('webhooks-notice').textContent = [what, result.next_step].filter(Boolean).join(' ');
  if (result.secret === undefined) return;
  const w = result.webhook;
  $('secret-once-body').replaceChildren(
    h('p', { text: `Webhook ${w.name} (${w.uid}) of factory ${w.factory}, ${w.auth_mode}${w.signature_scheme ? ` / ${w.signature_scheme}` : ''}.` }),
    copyField('Secret', result.secret),
    ...(result.url ? [copyField('URL with the token (secret too)', result.url)] : []),
  );
  $('secret-once').hidden = false;
  $('secret-once').scrollIntoView({ block: 'start' });
  $('secret-once-dismiss').focus();
}
$('secret-once-dismiss').addEventListener('click', () => {
  $('secret-once-body').replaceChildren();
  $('secret-once').hidden = true;
});

async function setEnabled(w, toggle) {
  const want = toggle.checked;
  const action = want ? 'enable' : 'disable';
  toggle.disabled = true;
  try {
    const result = await api('POST', `/api/v1/webhooks/${enc(w.uid)}/${action}`);
    showResult(result, `${w.name} is ${want ? 'enabled' : 'disabled'}.`);
    await loadWebhooks();
  } catch (err) {
    if (isStale(err)) return;
    toggle.checked = !want;
    showError($('webhooks-error'), err);
  } finally {
    toggle.disabled = false;
  }
}

async function rotate(w, button) {
  const provider = w.auth_mode === 'signature' && w.signature_scheme !== 'standard-webhooks';
  if (!confirm(`Rotate the secret of ${w.name}? The old secret stops working at once.${provider ? ' The provider generates this one: you will be asked for the new secret.' : ''}`)) return;
  let body;
  if (provider) {
    const secret = prompt(`The new ${w.signature_scheme} signing secret (from the provider):`);
    if (!secret) return;
    body = { secret };
  }
  await busy(button, async () => {
    try {
      showResult(await api('POST', `/api/v1/webhooks/${enc(w.uid)}/rotate`, body), `${w.name}: the secret was rotated.`);
      await loadWebhooks();
    } catch (err) {
      showError($('webhooks-error'), err);
    }
  });
}

async function setSecret(w, button) {
  const secret = prompt(`The ${w.signature_scheme} signing secret that the provider shows for ${w.name} (this also enables the webhook):`);
  if (!secret) return;
  await busy(button, async () => {
    try {
      showResult(await api('POST', `/api/v1/webhooks/${enc(w.uid)}/secret`, { secret }), `${w.name}: the provider secret is set and the webhook is enabled.`);
      await loadWebhooks();
    } catch (err) {
      showError($('webhooks-error'), err);
    }
  });
}

async function remove(w, button) {
  if (!confirm(`Delete the webhook ${w.name} (${w.uid})? Senders get 404 at once and the UID is never reused.`)) return;
  await busy(button, async () => {
    try {
      showResult(await api('DELETE', `/api/v1/webhooks/${enc(w.uid)}`), `${w.name} was deleted.`);
      if (state.deliveries.webhook?.uid === w.uid) $('deliveries').hidden = true;
      await loadWebhooks();
      app.renderFactories();
    } catch (err) {
      showError($('webhooks-error'), err);
    }
  });
}

$('webhooks-refresh').addEventListener('click', (e) => busy(e.currentTarget, async () => {
  await loadWebhooks();
  app.renderFactories();
}));

// ---------- create form ----------

$('c-scheme').replaceChildren(...SIGNATURE_SCHEMES.map((s) => h('option', { value: s, text: s })));

export function syncMode() {
  const signature = $('c-mode').value === 'signature';
  $('c-scheme').disabled = !signature;
  $('c-secret').disabled = !signature;
  if (!signature) $('c-secret').value = '';
}

/** The suggested secret name `<factory>-<name>-secret`, until the user types their own. */
export function suggestSecretName() {
  const input = $('c-secret-name');
  const suggestion = `${$('c-factory').value || '<factory>'}-${$('c-name').value || '<name>'}-secret`;
  input.placeholder = suggestion;
  if (!input.dataset.edited && $('c-factory').value && $('c-name').value) input.value = suggestion;
}

$('c-mode').addEventListener('change', syncMode);
$('c-factory').addEventListener('input', suggestSecretName);
$('c-name').addEventListener('input', suggestSecretName);
$('c-secret-name').addEventListener('input', (e) => {
  e.currentTarget.dataset.edited = e.currentTarget.value ? '1' : '';
});

$('create-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  const v = (id) => $(id).value.trim();
  const body = { name: v('c-name'), auth_mode: v('c-mode') };
  if (body.auth_mode === 'signature') {
    body.signature_scheme = v('c-scheme');
    if ($('c-secret').value !== '') body.secret = $('c-secret').value; // blank: generated or two-step
  }
  if (v('c-secret-name')) body.secret_name = v('c-secret-name');
  if (v('c-header')) body.delivery_id_header = v('c-header');
  if (v('c-description')) body.description = v('c-description');
  const button = form.querySelector('button[type=submit]');
  await busy(button, async () => {
    try {
      const result = await api('POST', `/api/v1/factories/${enc(v('c-factory'))}/webhooks`, body);
      showError($('create-error'));
      form.reset();
      $('c-secret-name').dataset.edited = '';
      syncMode();
      suggestSecretName();
      showResult(result, `Created ${result.webhook.name} (${result.webhook.uid})${result.webhook.enabled ? '' : ', disabled until its secret is set'}.`);
      await loadWebhooks();
      app.renderFactories();
    } catch (err) {
      showError($('create-error'), err);
    }
  });
});
