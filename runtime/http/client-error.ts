import type { Duplex } from 'node:stream';
import { FactoryError, type ErrorCode } from '../../core/errors.ts';
import type { Logger } from '../log.ts';
import { PROBLEM_CONTENT_TYPE, problemBody } from './problem.ts';

/**
 * The HTTP server's answer to a request its parser refuses before any route sees it
 * (docs/errors.md): problem+json like every other refusal, instead of Node's bare
 * `400 Bad Request` without a body, and always with `Connection: close` (the parser cannot go on
 * on that connection). Nothing is written when the client is gone or a response is already under
 * way on the socket.
 */
export function answerClientError(err: NodeJS.ErrnoException & { reason?: string }, socket: Duplex, log: Logger): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [code, detail] = refusal(err);
  log.info({ code: err.code, remoteAddress: (socket as { remoteAddress?: string }).remoteAddress }, 'malformed HTTP request refused');
  const problem = new FactoryError(code, detail);
  const { instance: _none, ...body } = problemBody(problem, '');
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

function refusal(err: NodeJS.ErrnoException & { reason?: string }): [ErrorCode, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') return ['headers_too_large', 'The request headers are over 16 KB in total.'];
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return ['request_timeout', 'The request did not arrive in time.'];
  // llhttp's reason is a short English phrase ("Invalid header value char"); without one, its code.
  const why = err.reason ?? err.code ?? 'unreadable';
  return ['invalid_request', `The request is not valid HTTP/1.1: ${why.replace(/\.$/, '')}.`];
}
