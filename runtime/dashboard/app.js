// The factory dashboard (SPEC 12). It calls only the public management and run APIs with the
// signed-in key, like the CLI. Every value from the API is untrusted (names, payloads, transcripts):
// it is rendered with textContent and DOM nodes only, never as HTML.

/** Shared with the session page (/sessions/<run_id>), so a run link opened in this tab is signed in too. */
const KEY_STORAGE = 'factory.apiKey';

/** SPEC 7.3; test/runtime/routes/dashboard.test.ts checks this list against core/snapshot.ts. */
const SIGNATURE_SCHEMES = ['standard-webhooks', 'github', 'gitlab', 'bitbucket', 'stripe', 'shopify', 'paddle', 'sentry', 'vercel', 'netlify', 'pagerduty', 'rootly', 'linear', 'slack', 'jira'];

const $ = (id) => document.getElementById(id);

const state = {
  webhooks: [],
  automations: [],
  factory: null, // the selected factory, or null for all
  deliveries: { webhook: null, cursor: null },
  runs: { cursor: null },
  transcript: { runId: null, after: 0, timer: null },
};

// ---------- DOM and API helpers ----------

/** Builds an element. `props`: text, class, on<Event> handlers, other attributes (set as attributes). */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || `The request failed with HTTP ${status}.`);
    this.status = status;
    this.problem = problem;
  }
}

/** One management or run API call with the signed-in key; a problem+json answer throws ApiError. */
async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY_STORAGE) ?? ''}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch {
    throw new ApiError(0, { detail: 'The runtime did not answer; is it running?' });
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401) signOut(err.message);
    throw err;
  }
  return data;
}

/** Shows an error's problem detail (and its field errors) in `el`; a falsy `err` clears it. */
function showError(el, err) {
  el.replaceChildren();
  if (!err) return;
  el.append(err instanceof ApiError || err instanceof Error ? err.message : String(err));
  const fields = err.problem?.errors;
  if (Array.isArray(fields) && fields.length) {
    el.append(h('ul', {}, fields.map((f) => h('li', { text: `${[f.file, f.pointer].filter(Boolean).join(' ') || '(body)'}: ${f.message}` }))));
  }
}

const enc = encodeURIComponent;
const fmtTime = (t) => (t ? h('time', { datetime: t, title: t, text: new Date(t).toLocaleString() }) : '—');
const fmtSize = (n) => (n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`);
const badge = (text, kind) => h('span', { class: `badge ${kind ?? ''}`, text });

async function copy(text, button, field) {
  try {
    await navigator.clipboard.writeText(text);
    const old = button.textContent;
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = old), 1500);
  } catch {
    // The clipboard needs a secure context (https or localhost): select the text so Ctrl+C works.
    if (field.select) field.select();
    else getSelection()?.selectAllChildren(field);
  }
}

/** A value with a Copy button: a read-only field, or with `wrap` a wrapping code element (long URLs). */
function copyField(label, value, { wrap = false } = {}) {
  const id = `cf-${Math.random().toString(36).slice(2)}`;
  const field = wrap
    ? h('code', { id, class: 'wrap', text: value })
    : h('input', { id, readonly: true, value, spellcheck: 'false', class: 'mono', size: Math.min(Math.max(value.length, 20), 64) });
  const btn = h('button', { type: 'button', 'aria-label': `Copy ${label || value}`, text: 'Copy' });
  btn.addEventListener('click', () => copy(value, btn, field));
  return h('div', { class: 'copy' }, label && !wrap ? h('label', { for: id, text: label }) : null, field, btn);
}

async function busy(button, fn) {
  button.disabled = true;
  try {
    await fn();
  } finally {
    button.disabled = false;
  }
}

// ---------- sign in / out ----------

function signedIn() {
  return Boolean(sessionStorage.getItem(KEY_STORAGE));
}

function showSignedIn(on) {
  $('signin').hidden = on;
  $('app').hidden = !on;
  $('signout').hidden = !on;
  $('who').textContent = on ? 'Signed in (this tab only)' : '';
}

/** Forgets the key and every piece of data shown with it. */
function signOut(message) {
  sessionStorage.removeItem(KEY_STORAGE);
  stopTranscript();
  for (const id of ['webhooks-list', 'deliveries-list', 'automations-list', 'runs-list', 'factories-list', 'test-result', 'transcript-events', 'secret-once-body', 't-automation', 'factory-names']) {
    $(id).replaceChildren();
  }
  for (const id of ['webhooks-error', 'webhooks-notice', 'automations-error', 'runs-error', 'factories-error', 'deliveries-error', 'test-error', 'create-error']) $(id).textContent = '';
  $('secret-once').hidden = true;
  $('deliveries').hidden = true;
  $('transcript').hidden = true;
  Object.assign(state, { webhooks: [], automations: [], factory: null });
  showSignedIn(false);
  $('signin-error').textContent = message ?? '';
  $('signin-key').focus();
}

$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const key = $('signin-key').value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_STORAGE, key);
  $('signin-key').value = '';
  $('signin-error').textContent = '';
  showSignedIn(true);
  await loadAll();
});
$('signout').addEventListener('click', () => signOut('Signed out.'));

async function loadAll() {
  await Promise.all([loadWebhooks(), loadAutomations()]);
  if (!signedIn()) return;
  renderFactories();
  await loadRuns(false);
}

// ---------- factories (derived; there is no factories route) ----------

function factoriesIndex() {
  const map = new Map();
  const get = (name) => map.get(name) ?? map.set(name, { name, managed: new Set(), webhooks: 0, automations: 0 }).get(name);
  for (const w of state.webhooks) {
    const f = get(w.factory);
    f.webhooks++;
    f.managed.add(w.managed_by);
  }
  for (const a of state.automations) {
    const f = get(a.factory);
    f.automations++;
    f.managed.add('definitions'); // automations exist only through definitions (apply)
  }
  return [...map.values()].sort((a, b) => a.name.localeCompare(b.name));
}

function renderFactories() {
  const list = factoriesIndex();
  const chip = (name, label, sub) =>
    h('button', { type: 'button', class: 'chip', 'aria-pressed': String(state.factory === name), onclick: () => selectFactory(name) }, label, sub ? h('span', { class: 'muted', text: ` ${sub}` }) : null);
  $('factories-list').replaceChildren(
    chip(null, 'All factories'),
    ...list.map((f) => chip(f.name, f.name, `· ${[...f.managed].join(', ')} · ${f.webhooks} webhook${f.webhooks === 1 ? '' : 's'}, ${f.automations} automation${f.automations === 1 ? '' : 's'}`)),
  );
  if (!list.length) $('factories-list').append(h('p', { class: 'muted', text: 'No factory yet: apply a factory repo, or create a webhook below (that creates an API-managed factory).' }));
  $('factory-names').replaceChildren(...list.map((f) => h('option', { value: f.name })));
}

function selectFactory(name) {
  state.factory = name;
  if (name) {
    $('c-factory').value = name;
    suggestSecretName();
  }
  renderFactories();
  renderWebhooks();
  renderAutomations();
  loadRuns(false);
}

// ---------- webhooks ----------

async function loadWebhooks() {
  try {
    state.webhooks = (await api('GET', '/api/v1/webhooks')).webhooks;
    showError($('webhooks-error'));
  } catch (err) {
    state.webhooks = [];
    showError($('webhooks-error'), err);
  }
  renderWebhooks();
}

function renderWebhooks() {
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
    const actions = [
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
    h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Factory', 'URL', 'Mode', 'Secret', 'State', 'Actions'].map((t) => h('th', { scope: 'col', text: t })))), h('tbody', {}, rows))),
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
      renderFactories();
    } catch (err) {
      showError($('webhooks-error'), err);
    }
  });
}

$('webhooks-refresh').addEventListener('click', (e) => busy(e.currentTarget, async () => {
  await loadWebhooks();
  renderFactories();
}));

// ---------- create form ----------

$('c-scheme').replaceChildren(...SIGNATURE_SCHEMES.map((s) => h('option', { value: s, text: s })));

function syncMode() {
  const signature = $('c-mode').value === 'signature';
  $('c-scheme').disabled = !signature;
  $('c-secret').disabled = !signature;
  if (!signature) $('c-secret').value = '';
}

/** The suggested secret name `<factory>-<name>-secret`, until the user types their own. */
function suggestSecretName() {
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
      renderFactories();
    } catch (err) {
      showError($('create-error'), err);
    }
  });
});

// ---------- deliveries ----------

function openDeliveries(w) {
  state.deliveries = { webhook: w, cursor: null };
  $('deliveries-h').textContent = `Deliveries of ${w.name} (${w.uid})`;
  $('deliveries-list').replaceChildren();
  $('deliveries').hidden = false;
  $('deliveries').scrollIntoView({ block: 'start' });
  loadDeliveries(false);
}

async function loadDeliveries(more) {
  const w = state.deliveries.webhook;
  if (!w) return;
  if (!more) state.deliveries.cursor = null;
  const q = new URLSearchParams({ limit: '20' });
  if (more && state.deliveries.cursor) q.set('cursor', state.deliveries.cursor);
  try {
    const page = await api('GET', `/api/v1/webhooks/${enc(w.uid)}/deliveries?${q}`);
    showError($('deliveries-error'));
    const items = page.deliveries.map((d) => deliveryItem(w, d));
    if (more) $('deliveries-list').append(...items);
    else $('deliveries-list').replaceChildren(...(items.length ? items : [h('p', { class: 'muted', text: 'No deliveries in the log.' })]));
    state.deliveries.cursor = page.page_info.next_cursor;
    $('deliveries-more').hidden = !page.page_info.has_next_page;
  } catch (err) {
    showError($('deliveries-error'), err);
  }
}

function deliveryItem(w, d) {
  const kind = d.outcome === 'accepted' ? 'ok' : d.outcome === 'duplicate' ? 'neutral' : 'bad';
  const payloadBox = h('div', { class: 'payload' });
  const runs = d.runs.length
    ? h('ul', { class: 'runs-started' }, d.runs.map((r) => h('li', {}, runLink(r.run_id), ' ', badge(r.state, stateKind(r.state)), r.automation ? ` automation ${r.automation}` : '')))
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
              payloadBox.replaceChildren(h('pre', { text: JSON.stringify(full.payload, null, 2) }));
              button.setAttribute('aria-expanded', 'true');
              button.textContent = 'Hide payload';
            } catch (err) {
              payloadBox.replaceChildren(h('p', { class: 'error' }));
              showError(payloadBox.firstChild, err);
            }
          });
        },
      })
    : null;
  const test = d.outcome === 'accepted' ? h('button', { type: 'button', text: 'Test filter…', onclick: () => prefillTest(w, d) }) : null;
  return h(
    'article',
    { class: 'delivery' },
    h('div', { class: 'line' }, badge(d.outcome_label, kind), h('code', { text: d.delivery_id }), h('span', { class: 'muted', text: fmtSize(d.size) }), fmtTime(d.received_at), d.sender ? h('span', { class: 'muted small', text: `from ${d.sender}` }) : null),
    d.reason ? h('p', { class: 'muted small', text: d.reason }) : null,
    runs,
    h('div', { class: 'actions' }, showPayload, test),
    payloadBox,
  );
}

$('deliveries-refresh').addEventListener('click', (e) => busy(e.currentTarget, () => loadDeliveries(false)));
$('deliveries-more').addEventListener('click', (e) => busy(e.currentTarget, () => loadDeliveries(true)));
$('deliveries-close').addEventListener('click', () => {
  $('deliveries').hidden = true;
  state.deliveries = { webhook: null, cursor: null };
});

// ---------- automations and Test filter ----------

async function loadAutomations() {
  try {
    state.automations = (await api('GET', '/api/v1/automations')).automations;
    showError($('automations-error'));
  } catch (err) {
    state.automations = [];
    showError($('automations-error'), err);
  }
  renderAutomations();
}

function renderAutomations() {
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
    h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Factory', 'State', 'Environment', 'Triggers (webhook, payload filter)'].map((t) => h('th', { scope: 'col', text: t })))), h('tbody', {}, rows)),
  );
}

function prefillTest(w, d) {
  const a = state.automations.find((x) => x.factory === w.factory && x.triggers.some((t) => t.webhook_uid === w.uid));
  if (state.factory && state.factory !== w.factory) selectFactory(w.factory);
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
  renderFactories();
}));

// ---------- runs and transcripts ----------

const stateKind = (s) => ({ SUCCEEDED: 'ok', FAILED: 'bad', ERROR: 'bad', CANCELLED: 'neutral', QUEUED: 'neutral', INPROGRESS: 'busy' })[s] ?? '';
const runLink = (id) => h('a', { href: `/sessions/${enc(id)}`, class: 'mono', text: id, onclick: (e) => { e.preventDefault(); openTranscript(id); } });

async function loadRuns(more) {
  const q = new URLSearchParams({ limit: '20' });
  if (state.factory) q.set('factory', state.factory);
  if ($('runs-state').value) q.set('state', $('runs-state').value);
  if (more && state.runs.cursor) q.set('cursor', state.runs.cursor);
  try {
    const page = await api('GET', `/api/v1/agent/runs?${q}`);
    showError($('runs-error'));
    const rows = page.runs.map(runRow);
    const tbody = $('runs-list').querySelector('tbody');
    if (more && tbody) tbody.append(...rows);
    else if (!rows.length) $('runs-list').replaceChildren(h('p', { class: 'muted', text: 'No runs.' }));
    else $('runs-list').replaceChildren(h('table', {}, h('thead', {}, h('tr', {}, ['Run', 'State', 'Title', 'Started by', 'Created', 'Actions'].map((t) => h('th', { scope: 'col', text: t })))), h('tbody', {}, rows)));
    state.runs.cursor = page.page_info.next_cursor;
    $('runs-more').hidden = !page.page_info.has_next_page;
  } catch (err) {
    $('runs-list').replaceChildren();
    $('runs-more').hidden = true;
    showError($('runs-error'), err);
  }
}

function runRow(r) {
  const origin = r.source === 'WEBHOOK' ? `${r.factory ?? ''} / ${r.automation ?? ''} (delivery ${r.delivery_id ?? ''})` : `${r.creator?.type ?? ''} ${r.creator?.name ?? ''}`;
  const cancellable = r.state === 'QUEUED' || r.state === 'INPROGRESS';
  return h(
    'tr',
    {},
    h('td', {}, runLink(r.run_id)),
    h('td', {}, badge(r.state, stateKind(r.state)), r.status_message ? h('div', { class: 'muted small', text: r.status_message }) : null),
    h('td', { text: r.title ?? '' }),
    h('td', {}, h('span', { class: 'small', text: origin })),
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

function stopTranscript() {
  clearTimeout(state.transcript.timer);
  state.transcript = { runId: null, after: 0, timer: null };
}

function openTranscript(runId) {
  stopTranscript();
  state.transcript.runId = runId;
  $('transcript-h').textContent = `Transcript of ${runId}`;
  $('transcript-link').href = `/sessions/${enc(runId)}`;
  $('transcript-events').replaceChildren();
  $('transcript-state').textContent = '';
  showError($('transcript-error'));
  $('transcript').hidden = false;
  $('transcript').scrollIntoView({ block: 'start' });
  pollTranscript(runId);
}

/** Reads the transcript from where it stopped; while the run is not finished, again every 2 s. */
async function pollTranscript(runId) {
  try {
    const run = await api('GET', `/api/v1/agent/runs/${enc(runId)}`);
    for (;;) {
      if (state.transcript.runId !== runId) return;
      const t = await api('GET', `/api/v1/agent/runs/${enc(runId)}/transcript?after=${state.transcript.after}`);
      if (state.transcript.runId !== runId) return;
      $('transcript-events').append(...t.events.map(renderEvent));
      state.transcript.after = t.next_after;
      $('transcript-state').textContent = `${t.state}${run.status_message ? ` — ${run.status_message}` : ''} · created ${run.created_at}`;
      if (t.has_more) continue;
      if (!t.finished) state.transcript.timer = setTimeout(() => pollTranscript(runId), 2000);
      return;
    }
  } catch (err) {
    if (state.transcript.runId === runId) showError($('transcript-error'), err);
  }
}

function renderEvent(ev) {
  const d = ev.data ?? {};
  const body = [];
  if (ev.type === 'command') {
    body.push(h('div', { class: 'mono', text: `$ ${d.text ?? (Array.isArray(d.argv) ? d.argv.join(' ') : '')}  → exit ${d.exit_code} in ${d.duration_ms} ms` }));
    if (d.output) body.push(h('pre', { text: d.output }));
  } else if (ev.type === 'output') body.push(h('pre', { text: d.text ?? '' }));
  else if (ev.type === 'message') body.push(h('pre', { text: [d.kind, d.tool].filter(Boolean).join(' ') + (d.text ? `: ${d.text}` : '') + (d.input ? ` ${d.input}` : '') }));
  else if (ev.type === 'file_change') {
    body.push(h('div', { class: 'mono', text: `${d.kind} ${d.repo ? `${d.repo}/` : ''}${d.path}` }));
    if (d.diff) body.push(h('pre', { text: d.diff }));
  } else body.push(h('div', { class: 'mono small', text: JSON.stringify(d) }));
  return h('div', { class: `ev ${ev.type}` }, h('div', { class: 'muted small', text: `#${ev.seq} ${ev.time} ${ev.type}` }), body);
}

$('transcript-close').addEventListener('click', () => {
  stopTranscript();
  $('transcript').hidden = true;
});

// ---------- start ----------

syncMode();
suggestSecretName();
if (signedIn()) {
  showSignedIn(true);
  loadAll();
} else {
  showSignedIn(false);
}
