// DOM, API and formatting helpers of the dashboard. Every value from the API is untrusted: it is
// rendered with textContent and DOM nodes only, never as HTML.

import { KEY_STORAGE, app } from './state.js';

export const $ = (id) => document.getElementById(id);

/**
 * A path of the runtime (an API route, a session page) as a URL next to the one this module was
 * loaded from (`<base>/dashboard/dom.js`), so the pages work under a base URL with a path too (a
 * proxy that mounts the runtime at `/factory/` and strips it): never root-absolute.
 */
export const runtimeUrl = (path) => new URL(`..${path}`, import.meta.url).href;

/** Builds an element. `props`: text, class, on<Event> handlers, other attributes (set as attributes). */
export function h(tag, props = {}, ...children) {
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

/**
 * An answer that arrived after a sign-out or sign-in (or a call made while signed out): it belongs
 * to a key the page has since forgotten, so whatever asked for it must not draw it, show it as an
 * error or act on it.
 */
class StaleAnswer extends Error {
  constructor() {
    super('An answer for an earlier sign-in, dropped.');
  }
}

/** Whether `err` is an answer for an earlier sign-in (api() throws it): the caller draws nothing. */
export const isStale = (err) => err instanceof StaleAnswer;

/** Counts sign-ins and sign-outs: an api() call started under an older one is stale when it answers. */
let session = 0;

/** Sign-in and sign-out: every answer still on its way belongs to the key before, and is dropped. */
export function newSession() {
  session++;
}

/** The current sign-in, to compare with later (`sameSession`), for work that spans several calls. */
export const currentSession = () => session;
export const sameSession = (s) => s === session;

/** What an API key is made of: the characters of a Bearer token (the runtime's keys are `fk_` + base64url). */
const KEY_CHARS = /^[A-Za-z0-9_\-.~+/=]$/;

/**
 * Why `key` (already trimmed) cannot be an API key, in a sentence for the person who typed it, or
 * null. A key copied from a chat or a web page can carry a space or an invisible character, which
 * the browser cannot send in a header or the runtime would refuse: better said here, by name.
 */
/**
 * The key typed into `inputId`, trimmed, and stored for this tab; or null, with keyProblem's
 * sentence shown in `errorId` and the input focused. Both sign-in forms (dashboard, session page).
 */
export function takeKey(inputId, errorId) {
  const key = $(inputId).value.trim();
  const problem = keyProblem(key);
  if (problem) {
    $(errorId).textContent = problem;
    $(inputId).focus();
    return null;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  return key;
}

export function keyProblem(key) {
  if (!key) return 'Enter an API key (fk_…).';
  const chars = [...key];
  const at = chars.findIndex((c) => !KEY_CHARS.test(c));
  if (at === -1) return null;
  const c = chars[at];
  const code = `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  const what = c === ' ' ? 'a space' : /\s/.test(c) ? `a blank (${code})` : /[\p{Cc}\p{Cf}]/u.test(c) ? `an invisible character (${code})` : `“${c}” (${code})`;
  return `That is not an API key: it has ${what} at character ${at + 1}, and a key has only letters, digits and - _ . ~ + / =. Copy it again from where it is kept.`;
}

/**
 * One management or run API call with the signed-in key; a problem+json answer throws ApiError,
 * and an answer that comes after a sign-out or sign-in throws StaleAnswer (isStale) instead. A
 * stored key that cannot be a key (keyProblem) is never sent: it signs out with the reason, as a
 * 401 would. A request the browser refuses to send is said so, not taken for a runtime that is down.
 */
export async function api(method, path, body) {
  const asked = session;
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (!key) throw new StaleAnswer();
  const problem = keyProblem(key);
  if (problem) {
    app.signOut(problem);
    // The dashboard's sign-out starts a new session: nothing is left to draw this error in.
    if (asked !== session) throw new StaleAnswer();
    throw new ApiError(401, { detail: problem });
  }
  const headers = { Authorization: `Bearer ${key}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let request;
  try {
    request = new Request(runtimeUrl(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (err) {
    // Nothing was sent: the browser refused the request itself (a TypeError), so the runtime is not to blame.
    throw new ApiError(null, { detail: `The browser refused to send this request: ${err?.message ?? err}` });
  }
  let res;
  try {
    res = await fetch(request);
  } catch {
    if (asked !== session) throw new StaleAnswer();
    throw new ApiError(0, { detail: 'The runtime did not answer; is it running?' });
  }
  let text;
  try {
    text = await res.text();
  } catch (err) {
    if (asked !== session) throw new StaleAnswer();
    throw err;
  }
  if (asked !== session) throw new StaleAnswer();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401) app.signOut(err.message);
    if (asked !== session) throw new StaleAnswer();
    throw err;
  }
  return data;
}

/** Shows an error's problem detail (and its field errors) in `el`; a falsy `err` clears it. */
export function showError(el, err) {
  if (isStale(err)) return;
  el.replaceChildren();
  if (!err) return;
  el.append(err instanceof ApiError || err instanceof Error ? err.message : String(err));
  const fields = err.problem?.errors;
  if (Array.isArray(fields) && fields.length) {
    el.append(h('ul', {}, fields.map((f) => h('li', { text: `${[f.file, f.pointer].filter(Boolean).join(' ') || '(body)'}: ${f.message}` }))));
  }
}

export const enc = encodeURIComponent;

/**
 * A list's loads, counted: only the newest may draw, so a slow answer for what the user has since
 * left (another webhook, filter or page) cannot draw over what they look at now. `start()` numbers
 * a load, `isLatest(load)` says whether it still is. (An answer for an earlier sign-in is dropped
 * by api() itself: isStale.)
 */
export function latestOnly() {
  let newest = 0;
  return {
    start: () => ++newest,
    isLatest: (load) => load === newest,
  };
}
export const fmtTime = (t) => (t ? h('time', { datetime: t, title: t, text: new Date(t).toLocaleString() }) : '—');
export const fmtSize = (n) => (n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`);
export const badge = (text, kind) => h('span', { class: `badge ${kind ?? ''}`, text });

/** A table with a header row, in a wrapper that scrolls sideways on a narrow screen. */
export const dataTable = (headers, rows) =>
  h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col', text: t })))), h('tbody', {}, rows)));

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

/**
 * A URL as text that may wrap only after a `/`, `?`, `&` or `=` (a <wbr> there), so a line never
 * ends in the middle of a host, UID or token; the text itself (and so a copy of it) is unchanged.
 */
export function urlText(url) {
  return url.split(/(?<=[/?&=])/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]));
}

/** A value with a Copy button: a read-only field, or with `wrap` a code element that wraps like a URL. */
export function copyField(label, value, { wrap = false } = {}) {
  const id = `cf-${Math.random().toString(36).slice(2)}`;
  const field = wrap
    ? h('code', { id, class: 'wrap' }, urlText(value))
    : h('input', { id, readonly: true, value, spellcheck: 'false', class: 'mono', size: Math.min(Math.max(value.length, 20), 64) });
  const btn = h('button', { type: 'button', 'aria-label': `Copy ${label || value}`, text: 'Copy' });
  btn.addEventListener('click', () => copy(value, btn, field));
  return h('div', { class: 'copy' }, label && !wrap ? h('label', { for: id, text: label }) : null, field, btn);
}

export async function busy(button, fn) {
  button.disabled = true;
  try {
    await fn();
  } finally {
    button.disabled = false;
  }
}
