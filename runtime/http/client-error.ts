import type { Duplex } from 'node:stream';
import { FactoryError, type ErrorCode } from '../../core/errors.ts';
import type { Logger } from '../log.ts';
import { PROBLEM_CONTENT_TYPE, problemBody, problemHeaders } from './problem.ts';

/**
 * The HTTP server's answer to a request its parser refuses before any route sees it
 * (docs/errors.md): problem+json like every other refusal, instead of Node's bare
 * `400 Bad Request` without a body, and always with `Connection: close` (the parser cannot go on
 * on that connection). Nothing is written when the client is gone or a response is already under
 * way on the socket.
 */
export function answerClientError(err: ParserError, socket: Duplex, log: Logger): void {
  // As Node's own handler does: answer unless the client is gone or an answer has begun, then
  // destroy the socket with the error, so a request a route is already reading sees it (and the
  // app logs it as a client that broke its request: app.ts).
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean; req?: { destroy(err: Error): void } } })._httpMessage;
  if (err.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
    if (!inFlight) log.info({ code: err.code, remoteAddress: (socket as { remoteAddress?: string }).remoteAddress }, 'malformed HTTP request refused');
    const [code, detail] = refusal(err);
    const problem = new FactoryError(code, detail);
    const text = JSON.stringify(problemBody(problem, requestPath(err)));
    const headers = Object.entries(problemHeaders(problem)).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(
      `HTTP/1.1 ${problem.status} ${problem.title}\r\n${headers}Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  // A request whose body had not all arrived in time: its route sees this error itself (not just
  // a closed connection), so it is logged as the 408 it was answered with. After the answer is
  // written: destroying a request that is not complete destroys its socket too.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') inFlight?.req?.destroy(err);
  socket.destroy(err);
}

type ParserError = NodeJS.ErrnoException & { reason?: string; rawPacket?: Buffer };

/** The path of the refused request when its request line was readable, for the problem's `instance` (redacted there). */
function requestPath(err: ParserError): string {
  const line = err.rawPacket?.subarray(0, 8192).toString('latin1').split('\r\n', 1)[0] ?? '';
  const m = /^[A-Z]+ (\/[^\s?#]*)\S* HTTP\/1\.[01]$/.exec(line);
  return m ? m[1] : '';
}

function refusal(err: ParserError): [ErrorCode, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') return ['headers_too_large', 'The request headers are over 16 KB in total.'];
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return ['request_timeout', 'The request did not arrive in time.'];
  // llhttp's reason is a short English phrase ("Invalid header value char"); without one, its code.
  const why = err.reason ?? err.code ?? 'unreadable';
  return ['invalid_request', `The request is not valid HTTP/1.1: ${why.replace(/\.$/, '')}.`];
}
