import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';

/**
 * Requests Node's HTTP parser refuses (docs/errors.md): answered as problem+json with
 * `Connection: close`, over a raw socket, since no HTTP client sends such requests.
 */

/** Writes `raw` and reads until the server closes the connection. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
    socket.write(raw);
  });
}

function parse(answer: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const [head, text] = answer.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  assert.equal(Buffer.byteLength(text), Number(headers['content-length']), 'Content-Length is the body length');
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(text) as Record<string, unknown> };
}

describe('requests the HTTP parser refuses', () => {
  let rt: TestRuntime;
  before(async () => {
    rt = await startTestRuntime();
  });
  after(() => rt.stop());

  const cases: [string, string, RegExp][] = [
    ['two different Content-Lengths', 'POST /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', /Content-Length/i],
    ['Content-Length with Transfer-Encoding', 'POST /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /Transfer-Encoding|Content-Length/i],
    ['a space before a header colon', 'POST /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz HTTP/1.1\r\nHost: a\r\nX-Hub-Signature-256 : sha256=00\r\nContent-Length: 2\r\n\r\n{}', /header/i],
    ['a control character in a header value', 'POST /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz HTTP/1.1\r\nHost: a\r\nX-GitHub-Delivery: a\x01b\r\nContent-Length: 2\r\n\r\n{}', /header/i],
  ];
  for (const [what, raw, why] of cases) {
    it(`${what}: 400 invalid_request problem+json, connection closed`, async () => {
      const { status, headers, body } = parse(await exchange(rt.port, raw));
      assert.equal(status, 400);
      assert.equal(headers['content-type'], 'application/problem+json');
      assert.equal(headers.connection, 'close');
      assert.equal(headers['x-should-retry'], 'false');
      assert.equal(body.code, 'invalid_request');
      assert.equal(body.status, 400);
      assert.match(String(body.detail), /^The request is not valid HTTP\/1\.1: .+\.$/);
      assert.match(String(body.detail), why);
      assert.equal(body.instance, '/webhooks/w/wh_abcdefghijklmnopqrstuvwxyz');
    });
  }

  it('headers over 16 KB: 431 headers_too_large', async () => {
    const raw = `GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`;
    const { status, body } = parse(await exchange(rt.port, raw));
    assert.equal(status, 431);
    assert.equal(body.code, 'headers_too_large');
  });

  it('logs one info line without the request, and the runtime goes on serving', async () => {
    const refusals = () => rt.logs.records().filter((r) => r.msg === 'malformed HTTP request refused' || r.msg === 'client broke its request');
    const before = refusals().length;
    await exchange(rt.port, 'POST /webhooks/w/wh_secret-url-token HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}');
    const lines = refusals();
    assert.equal(lines.length, before + 1, 'one line for one refused request');
    assert.equal(lines.at(-1)!.msg, 'malformed HTTP request refused');
    assert.equal(lines.at(-1)!.level, 30);
    assert.ok(!rt.logs.text.includes('secret-url-token'));
    // The problem names the path with the URL token redacted.
    const answer = await exchange(rt.port, 'POST /webhooks/w/wh_abcdefghijklmnopqrstuvwxyz/secret-url-token HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}');
    assert.ok(!answer.includes('secret-url-token'), answer);
    assert.equal((await fetch(`${rt.url}/healthz`)).status, 200);
  });
});
