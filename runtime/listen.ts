import type { Server } from 'node:http';
import { getSystemErrorMap } from 'node:util';
import { CliError } from '../core/errors.ts';

/**
 * Listens on host:port; when that cannot be, one sentence naming both and why, never Node's bare
 * `listen EADDRNOTAVAIL` or `getaddrinfo ENOTFOUND` (docs/runtime.md#the-data-dir).
 */
export function listen(server: Server, host: string, port: number, flag = '--port'): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => reject(new CliError(listenFailure(err, host, port, flag)));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function listenFailure(err: NodeJS.ErrnoException, host: string, port: number, flag: string): string {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (err.code) {
    case 'EADDRINUSE':
      return `${where} is already in use; stop the other process or pass ${flag}.`;
    case 'EACCES':
      return `not allowed to listen on ${where}; use a port above 1023 (${flag}).`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: ${host} is no address of this machine; pass --host with one of its addresses, e.g. 127.0.0.1, or 0.0.0.0 for all of them.`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return `cannot listen on port ${port} of ${JSON.stringify(host)}: the host name does not resolve to an address (${err.code}); pass --host with an address of this machine, e.g. 127.0.0.1, or 0.0.0.0 for all of them.`;
    default: {
      const reason = (typeof err.errno === 'number' && getSystemErrorMap().get(err.errno)?.[1]) || err.message;
      return `cannot listen on ${where}: ${reason} (${err.code ?? 'no error code'}).`;
    }
  }
}
