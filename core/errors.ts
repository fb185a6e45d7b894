/**
 * The one errors module. Every stable error code the project emits is listed here once, with
 * its HTTP status and title (docs/api.md). Codes are public API: docs/errors.md lists the same
 * codes and test/core/errors.test.ts fails when the two disagree.
 *
 * Koa turns a FactoryError into problem+json in exactly one middleware
 * (runtime/http/problem.ts); the CLI turns it into an exit code in exactly one place
 * (cli/main.ts). Never hang a `status` on a plain Error.
 */

export const ERROR_CODES = {
  invalid_request: { status: 400, title: 'Invalid request' },
  invalid_json: { status: 400, title: 'Invalid JSON' },
  operation_not_supported: { status: 400, title: 'Operation not supported' },
  authentication_required: { status: 401, title: 'Authentication required' },
  not_authorized: { status: 403, title: 'Not authorized' },
  resource_not_found: { status: 404, title: 'Resource not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Too many requests' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  internal_error: { status: 500, title: 'Internal error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** One item of a validation failure: a JSON pointer into the request and what is wrong there. */
export interface FieldError {
  pointer: string;
  message: string;
  /** Optional extras for definitions errors (plan/apply): the source file of the resource. */
  file?: string;
  code?: string;
}

export interface FactoryErrorOptions {
  errors?: FieldError[];
  retryable?: boolean;
  /** Extra response headers, e.g. `Retry-After` or `Allow`. */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error with a stable code. Its message (the `detail`) is one human sentence. */
export class FactoryError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors?: FieldError[];
  readonly retryable: boolean;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, detail: string, options: FactoryErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FactoryError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.errors = options.errors;
    this.retryable = options.retryable ?? (this.status >= 500 || this.status === 429);
    this.headers = options.headers;
  }

  get title(): string {
    return ERROR_CODES[this.code].title;
  }
}

/** Shorthands for the common cases; each returns (does not throw) the error. */
export const invalidRequest = (detail: string, errors?: FieldError[]) =>
  new FactoryError('invalid_request', detail, { errors });
export const notFound = (detail: string) => new FactoryError('resource_not_found', detail);
export const conflict = (detail: string, errors?: FieldError[]) =>
  new FactoryError('conflict', detail, { errors });

/**
 * A CLI usage or runtime failure that is not an HTTP problem: exit code 2 for usage, 1 otherwise.
 * The message is one sentence, printed to stderr without a stack trace.
 */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

export const usageError = (message: string) => new CliError(message, 2);

/** A quiet non-zero exit: the command has already printed what it had to say. */
export const exitWith = (code: number) => new CliError("", code);
