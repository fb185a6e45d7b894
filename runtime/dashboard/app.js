// The factory dashboard (docs/dashboard.md). It calls only the public management and run APIs with the
// signed-in key, like the CLI. Every value from the API is untrusted (names, payloads, transcripts):
// it is rendered with textContent and DOM nodes only, never as HTML.
//
// This module signs in and out, derives the factory list and starts the page; each area has its
// own module, loaded from the fixed list in runtime/routes/dashboard.ts.

import { loadAutomations, renderAutomations } from './automations.js';
import { $, currentSession, h, newSession, sameSession, takeKey } from './dom.js';
import { loadRuns, stopTranscript } from './runs.js';
import { app, KEY_STORAGE, state } from './state.js';
import { loadWebhooks, renderWebhooks, suggestSecretName, syncMode } from './webhooks.js';

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
  // Every answer still on its way (any section) belongs to the key just forgotten: none may draw.
  newSession();
  stopTranscript();
  for (const id of ['webhooks-list', 'deliveries-list', 'automations-list', 'runs-list', 'factories-list', 'test-result', 'transcript-events', 'notifications-list', 'notifications-target', 'secret-once-body', 't-automation', 'factory-names']) {
    $(id).replaceChildren();
  }
  for (const id of ['webhooks-error', 'webhooks-notice', 'automations-error', 'runs-error', 'factories-error', 'deliveries-error', 'test-error', 'create-error']) $(id).textContent = '';
  for (const id of ['transcript-state', 'transcript-error']) $(id).textContent = '';
  $('deliveries-h').textContent = 'Deliveries';
  $('transcript-h').textContent = 'Transcript';
  $('transcript-link').href = '#';
  // What was typed (a provider secret among it) belongs to this sign-in too.
  $('create-form').reset();
  $('test-form').reset();
  $('runs-state').value = '';
  $('c-secret-name').dataset.edited = '';
  syncMode();
  suggestSecretName();
  $('secret-once').hidden = true;
  $('deliveries').hidden = true;
  $('transcript').hidden = true;
  $('notifications').hidden = true;
  Object.assign(state, { webhooks: [], webhooksForbidden: false, automations: [], schedules: [], factory: null, deliveries: { webhook: null, cursor: null }, runsForbidden: null });
  showSignedIn(false);
  $('signin-error').textContent = message ?? '';
  $('signin-key').focus();
}

$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (takeKey('signin-key', 'signin-error') === null) return;
  newSession();
  $('signin-key').value = '';
  $('signin-error').textContent = '';
  showSignedIn(true);
  await loadAll();
});
$('signout').addEventListener('click', () => signOut('Signed out.'));

async function loadAll() {
  const session = currentSession();
  await Promise.all([loadWebhooks(), loadAutomations()]);
  if (!sameSession(session)) return;
  renderFactories();
  await loadRuns(false);
  // What the factory list says of the runs depends on whether the key may list them.
  if (sameSession(session)) renderFactories();
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
  // A key without the manage scope (403 on the webhooks) sees no factory because it may list none, not because there is none;
  // whether its runs are below is known once they answered (a worker key has neither scope).
  const forbidden = {
    null: 'This key cannot list factories: that needs the manage scope.',
    false: 'This key cannot list factories: that needs the manage scope. Its runs are below.',
    true: 'This key can list neither factories (that needs the manage scope) nor runs (the runs scope): the dashboard has nothing to show with it.',
  }[String(state.runsForbidden)];
  if (!list.length && state.webhooksForbidden) $('factories-list').append(h('p', { class: 'muted', text: forbidden }));
  else if (!list.length) $('factories-list').append(h('p', { class: 'muted', text: 'No factory yet: apply a factory repo, or create a webhook below (that creates an API-managed factory).' }));
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

// ---------- start ----------

Object.assign(app, { signOut, renderFactories, selectFactory });
syncMode();
suggestSecretName();
if (signedIn()) {
  showSignedIn(true);
  loadAll();
} else {
  showSignedIn(false);
}
