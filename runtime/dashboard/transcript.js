// One transcript event as DOM nodes (the event types of docs/runs.md#transcript), shared by the dashboard's transcript
// panel (runs.js) and the session page (session.js), so both read the same.

import { h } from './dom.js';

/**
 * Text from a run (its output, title, status) as it reads best on a page, the same rule as the
 * CLI's: an agent's or a setup command's output holds terminal escape sequences, which a page
 * would show as noise. Colour (SGR: `ESC [ ... m`) is dropped; every other control character, C1
 * ones included, is shown as `\xNN`; tab and newline stay, and CRLF becomes a newline.
 */
export function visible(text) {
  return String(text)
    .replace(/\x1b\[[0-9;:]*m/g, '')
    .replace(/\r\n/g, '\n')
    .replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** An argv as it would be typed in a shell: a word with spaces or quotes is single-quoted. */
export function shellQuote(argv) {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${String(a).replaceAll("'", `'\\''`)}'`)).join(' ');
}

export function renderEvent(ev) {
  const d = ev.data ?? {};
  const body = [];
  if (ev.type === 'command') {
    const status = d.exit_code === null || d.exit_code === undefined ? `signal ${d.signal ?? '?'}` : `exit ${d.exit_code}`;
    // The agent's command event comes when it ends, after its streamed output.
    const phase = d.phase === 'agent' ? 'agent ended' : d.phase ?? 'command';
    // An argv (the agent, git) is shown quoted, so `sh -c 'echo hi'` does not read as three words more.
    const line = Array.isArray(d.argv) ? shellQuote(d.argv) : d.text ?? '';
    body.push(h('div', { class: 'mono', text: visible(`$ ${line}  (${phase}: ${status}, ${d.duration_ms} ms)`) }));
    if (d.output) body.push(h('pre', { text: visible(d.output) }));
  } else if (ev.type === 'output') body.push(h('pre', { text: visible(d.text ?? '') }));
  else if (ev.type === 'message') body.push(h('pre', { text: visible([d.kind, d.tool].filter(Boolean).join(' ') + (d.text ? `: ${d.text}` : '') + (d.input ? ` ${d.input}` : '')) }));
  else if (ev.type === 'file_change') {
    body.push(h('div', { class: 'mono', text: visible(`${d.kind} ${d.repo ? `${d.repo}/` : ''}${d.path}`) }));
    if (d.diff) body.push(h('pre', { text: visible(d.diff) }));
  } else if (ev.type === 'state') {
    body.push(h('div', { class: 'mono', text: visible(`${d.from ? `${d.from} → ` : ''}${d.to ?? ''}${d.status_message ? `: ${d.status_message}` : ''}`) }));
  } else body.push(h('div', { class: 'mono small', text: JSON.stringify(d) }));
  return h('div', { class: `ev ${ev.type}` }, h('div', { class: 'muted small', text: `#${ev.seq} ${ev.time} ${ev.type}` }), body);
}
