/**
 * JSON.parse's message, read two ways. V8 quotes the start of the text into some of its messages
 * (`Unexpected token 'L', "..." is not valid JSON`), over several lines when the text has them.
 * A user's own file is named in one line without that quote (`jsonReason`, the CLI); a request
 * body never has any of its text carried back (`jsonProblem`, the API).
 */

/**
 * JSON.parse's reason on one line, without the excerpt of the file V8 quotes into it (which may
 * span lines): `Unexpected token 'o'`, `Unexpected end of JSON input`.
 */
export function jsonReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/,? "[\s\S]*"(?:\.\.\.)? is not valid JSON$/, '').replace(/\s+/g, ' ').trim();
}

/**
 * What JSON.parse found wrong, in words that never quote the body: V8 quotes the start of the text
 * in some messages, and a body may hold a secret value (a PUT of a secret, a run's webhook secret),
 * which an answer (and a proxy logging answers) must not carry back. The position is kept.
 */
export function jsonProblem(message: string): string {
  const at = /at position (\d+)/.exec(message);
  const where = at ? ` at character ${Number(at[1]) + 1}` : '';
  const known = /^(Unexpected end of JSON input|Unexpected non-whitespace character after JSON|Expected [^"]*?|Bad (?:escaped|control) character[^"]*?|Unterminated string[^"]*?|Exponent part is missing a number|No number after minus sign|Unterminated fractional number)(?= in JSON| at position|$)/.exec(message);
  if (known) return known[1].replace(/ in string literal$/, ' in a string') + where;
  if (message.startsWith('Unexpected token')) return `an unexpected character${where}`;
  return `it does not parse${where}`;
}
