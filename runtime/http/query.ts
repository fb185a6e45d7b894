import type { Context, Next } from 'koa';
import { invalidRequest, type FactoryError, type FieldError } from '../../core/errors.ts';

/**
 * The query parameters a route takes (docs/api.md: nothing is silently ignored). Any other is a
 * 400 naming it, and so is one given twice: a typo (`?limt=5`) or a repeated value
 * (`?limit=1&limit=abc`) never quietly falls back to a default. `booleans` must be `true` or
 * `false`. The values are checked further by the route itself.
 */
export function queryParams(allowed: readonly string[], booleans: readonly string[] = []) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const errors: { pointer: string; message: string }[] = [];
    for (const [name, value] of Object.entries(ctx.query)) {
      if (!allowed.includes(name)) {
        errors.push({ pointer: name, message: allowed.length ? `unknown query parameter; this route takes ${allowed.join(', ')}` : 'unknown query parameter; this route takes none' });
      } else if (Array.isArray(value)) {
        errors.push({ pointer: name, message: 'given more than once' });
      } else if (booleans.includes(name) && value !== 'true' && value !== 'false') {
        errors.push({ pointer: name, message: `must be true or false, got ${JSON.stringify(value)}` });
      }
    }
    if (errors.length) throw invalidQuery(errors);
    await next();
  };
}

/**
 * The 400 of a query with problems: the detail says the first of them, as every query check says
 * it (docs/api.md#conventions), and `errors` lists them all. A message that already begins with the
 * parameter's name is not prefixed with it again.
 */
export function invalidQuery(errors: FieldError[]): FactoryError {
  const [first] = errors;
  const said = first.message.startsWith(`${first.pointer} `) ? first.message : `${first.pointer}: ${first.message}`;
  return invalidRequest(`The query is not valid: ${said}.`, errors);
}
