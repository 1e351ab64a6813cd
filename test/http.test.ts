import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ key } = await t.seedBasic());
});
afterAll(async () => {
  // Nothing this suite did may have put the plaintext key into a log line.
  const logs = t.logs.join('');
  expect(logs.length).toBeGreaterThan(1000);
  expect(logs).not.toContain(key);
  expect(logs).not.toContain(key.split('-').slice(1).join('-'));
  await t.close();
});

describe('error bodies (docs/integrate/rest-api.md "HTTP errors")', () => {
  const bad: [string, string | undefined, Record<string, string>?][] = [
    ['malformed JSON', '{"licenseKey": '],
    ['not an object', '[1,2,3]'],
    ['wrong type', JSON.stringify({ licenseKey: 12345 })],
    ['missing field', JSON.stringify({ version: '1.0.0' })],
    ['empty body', ''],
    ['form content type', 'licenseKey=x', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['text content type', JSON.stringify({ licenseKey: 'x' }), { 'content-type': 'text/plain' }],
  ];
  for (const [name, body, headers] of bad) {
    it(`validate: ${name} → 400 with the error body`, async () => {
      const response = await t.request('POST', '/api/v1/validate', body ?? '', { 'content-type': 'application/json', ...headers });
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ error: { code: 'InvalidRequest', message: expect.any(String), requestId: response.headers.get('x-request-id'), ...(response.json.error.fields ? { fields: expect.any(Object) } : {}) } });
      expect(response.text).not.toMatch(/at .*\.ts|stack/i);
    });
  }

  // The NUL guard read the media type case-sensitively, so these reached the routes and gave 500.
  const OTHER_MEDIA_TYPES = ['application/JSON', 'Application/Json; charset=utf-8', 'application/vnd.api+json', 'application/merge-patch+json', 'APPLICATION/JSON; charset=latin1', 'text/json', 'application/json; foo=bar', 'application/json;;', 'not a media type'];
  it.each(OTHER_MEDIA_TYPES)('validate with content-type %j and a NUL in a field → 400, never 500', async (contentType) => {
    const response = await t.request('POST', '/api/v1/validate', JSON.stringify({ licenseKey: `${key}\u0000` }), { 'content-type': contentType });
    expect(response.status).toBe(400);
    expect(response.json.error.code).toBe('InvalidRequest');
  });

  it('only application/json (any letter case, optionally charset=utf-8) is read as the body', async () => {
    for (const contentType of ['application/json', 'Application/JSON', 'application/json; charset=UTF-8', 'application/json;charset="utf-8"']) {
      const response = await t.request('POST', '/api/v1/validate', JSON.stringify({ licenseKey: key }), { 'content-type': contentType });
      expect(response.status, contentType).toBe(200);
      expect(response.json.isValid).toBe(true);
    }
    for (const contentType of ['application/vnd.api+json', 'application/json; charset=latin1', 'text/plain']) {
      const response = await t.request('POST', '/api/v1/validate', JSON.stringify({ licenseKey: key }), { 'content-type': contentType });
      expect(response.status, contentType).toBe(400);
      expect(response.json.error.message).toBe('Send the body as JSON with Content-Type: application/json.');
    }
  });

  it('a huge body → 400, never 500', async () => {
    const response = await t.post('/api/v1/activate', { licenseKey: key, nonce: 'x', deviceName: 'y'.repeat(200_000) });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ code: 'InvalidRequest', message: expect.stringContaining('KiB') });
  });

  it('a chunked body (no Content-Length) over 16 KiB → 400 while it is read', async () => {
    const chunk = new TextEncoder().encode(`{"licenseKey": "${key}", "deviceName": "${'y'.repeat(4096)}`);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await fetch(`${t.baseUrl}/api/v1/validate`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit);
    expect(response.headers.get('content-length')).not.toBeNull();
    expect(response.status).toBe(400);
    expect((await response.json()).error).toMatchObject({ code: 'InvalidRequest', message: expect.stringContaining('16 KiB') });
  });

  it('without Content-Type: no body reads as {} (the missing fields named), a body is refused', async () => {
    const empty = await fetch(`${t.baseUrl}/api/v1/validate`, { method: 'POST' });
    expect(empty.status).toBe(400);
    expect((await empty.json()).error.fields).toHaveProperty('licenseKey');
    const withBody = await fetch(`${t.baseUrl}/api/v1/validate`, { method: 'POST', body: new TextEncoder().encode(JSON.stringify({ licenseKey: key })) });
    expect(withBody.status).toBe(400);
    expect((await withBody.json()).error.message).toBe('Send the body as JSON with Content-Type: application/json.');
  });

  it("keeps the caller's X-Request-Id when it is a plain token, else makes one", async () => {
    const kept = await t.post('/api/v1/validate', { licenseKey: 12 }, { 'x-request-id': 'lb-4711=abc' });
    expect(kept.headers.get('x-request-id')).toBe('lb-4711=abc');
    expect(kept.json.error.requestId).toBe('lb-4711=abc');
    const replaced = await t.post('/api/v1/validate', { licenseKey: 12 }, { 'x-request-id': 'not a token' });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(replaced.json.error.requestId).toBe(replaced.headers.get('x-request-id'));
  });

  it('HEAD is GET without a body; other methods on a route are 404', async () => {
    const head = await t.request('HEAD', '/api/v1/openapi.json');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(Number(head.headers.get('content-length'))).toBeGreaterThan(1000);
    const put = await t.request('PUT', '/api/v1/validate', { licenseKey: key });
    expect(put.status).toBe(404);
    expect(put.json.error).toMatchObject({ code: 'NotFound', message: 'No route for PUT /api/v1/validate.' });
    expect(put.headers.get('ratelimit-limit')).not.toBeNull();
  });

  it('wrong types on activate → 400 naming the field', async () => {
    const response = await t.post('/api/v1/activate', { licenseKey: key, nonce: 42, deviceId: ['a'] });
    expect(response.status).toBe(400);
    expect(Object.keys(response.json.error.fields)).toEqual(expect.arrayContaining(['nonce', 'deviceId']));
  });

  it('unknown route → 404 with the error body', async () => {
    const response = await t.get('/api/v1/nope');
    expect(response.status).toBe(404);
    expect(response.json.error.code).toBe('NotFound');
  });
});

describe('the license key stays out of URLs', () => {
  it('a key in the query string is refused', async () => {
    for (const query of [`licenseKey=${key}`, `key=${encodeURIComponent(key)}`, `q=${key.toLowerCase()}`]) {
      const response = await t.post(`/api/v1/validate?${query}`, { licenseKey: key });
      expect(response.status).toBe(400);
      expect(response.json.error.message).toMatch(/never in the URL/);
    }
  });

  it('a key in the path is refused and not logged', async () => {
    const response = await t.get(`/api/v1/licenses/${key}`);
    expect(response.status).toBe(400);
    expect(response.text).not.toContain(key);
  });
});

describe('service endpoints', () => {
  it('healthz and readyz', async () => {
    expect((await t.get('/healthz')).json).toEqual({ status: 'ok' });
    expect((await t.get('/readyz')).json).toEqual({ status: 'ok', database: 'ok' });
  });

  it('answers a health check without a Host header (HTTP/1.0, as HAProxy\'s `option httpchk GET /readyz` sends it)', async () => {
    const { port } = new URL(t.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      // Written without ending our side (Node aborts a request whose client half-closes): the server closes after its answer.
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('GET /readyz HTTP/1.0\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it('serves an OpenAPI 3.1 document of /api/v1 generated from the route schemas', async () => {
    const response = await t.get('/api/v1/openapi.json');
    expect(response.status).toBe(200);
    const doc = response.json;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual(['/activate', '/artifacts/{artifactId}/download', '/artifacts/{artifactId}/file', '/deactivate', '/feeds/download/{product}/{artifactId}/{filename}', '/feeds/electron/{product}/{file}', '/feeds/tauri/{product}/{target}/{arch}/{currentVersion}', '/float/checkin', '/float/checkout', '/float/heartbeat', '/license-file', '/meter', '/nonce', '/payments/{connectionId}/webhook', '/releases', '/releases/upgrade', '/validate']);
    expect(doc.components.securitySchemes.SessionToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/float/heartbeat'].post.security).toEqual([{ SessionToken: [] }, {}]);
    expect(doc.components.schemas.MeterRequest.properties.event.pattern).toBe('^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)*$');
    expect(doc.components.schemas.RejectionCode.enum).toEqual(expect.arrayContaining(['FloatingSeatsExhausted', 'SessionExpired', 'QuotaExceeded']));
    expect(doc.paths['/activate'].post.responses).toHaveProperty('422');
    expect(doc.components.schemas.ValidateResponse.properties).toHaveProperty('offlineCacheToken');
    expect(doc.components.schemas.ActivateRequest.properties).toHaveProperty('nonce');
    expect(doc.components.schemas.RejectionCode.enum).toEqual(expect.arrayContaining(['SeatsExhausted', 'LicenseNotFound']));
  });

  it('every response carries a request id', async () => {
    const response = await t.get('/healthz');
    expect(response.headers.get('x-request-id')).toMatch(/.{8,}/);
  });
});

describe('serving the admin console', () => {
  it('serves index.html for client routes (UUID deep links included), assets with long caching, and leaves API paths alone', async () => {
    const { mkdtempSync, mkdirSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const { createHttpServer } = await import('../server/src/app.js');
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-console-'));
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>Keyforge console</title>');
    writeFileSync(path.join(dir, 'assets', 'app-123.js'), 'console.log(1)');
    // The server of `pnpm start`, with a console directory, on its own port.
    const server = createHttpServer(t.deps, { consoleDir: dir });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => {
      server.closeAllConnections();
      server.close();
    });
    const { port } = server.address() as import('node:net').AddressInfo;
    const get = async (pathname: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${pathname}`);
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, json: text.startsWith('{') ? JSON.parse(text) : undefined };
    };

    const deepLink = await get('/licenses/3f2b8c1e-9a7d-4e21-b6f0-5c8d2e1a9b77');
    expect(deepLink.status).toBe(200);
    expect(deepLink.text).toContain('Keyforge console');
    expect(deepLink.headers.get('cache-control')).toBe('no-cache');
    expect((await get('/')).text).toContain('Keyforge console');

    const asset = await get('/assets/app-123.js');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await get('/assets/missing.js')).status).toBe(404);

    const api = await get('/api/v1/nope');
    expect(api.status).toBe(404);
    expect(api.json.error.code).toBe('NotFound');
    expect((await get('/.well-known/jwks.json')).json.keys).toEqual(expect.arrayContaining([expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', kid: expect.any(String) })]));
    // A key in a console path is still refused.
    expect((await get(`/licenses/${key}`)).status).toBe(400);
    // With metrics off (this server has none), /metrics is not a console page: a scraper gets a 404, not HTML.
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(404);
    expect(metrics.text).not.toContain('Keyforge console');
  });
});

describe('CORS on the public API', () => {
  it('any origin may call it (no credentials); preflights are answered', async () => {
    const call = await t.post('/api/v1/validate', { licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA' }, { origin: 'https://app.example' });
    expect(call.headers.get('access-control-allow-origin')).toBe('*');
    expect(call.headers.get('access-control-expose-headers')).toContain('retry-after');
    expect(call.headers.get('access-control-expose-headers')).toContain('idempotent-replayed');
    expect(call.headers.get('access-control-allow-credentials')).toBeNull();
    expect(call.headers.get('x-content-type-options')).toBe('nosniff');
    const rejected = await t.post('/api/v1/validate', '{bad', { origin: 'https://app.example' });
    expect(rejected.status).toBe(400);
    expect(rejected.headers.get('x-content-type-options')).toBe('nosniff');
    expect(rejected.headers.get('access-control-allow-origin')).toBe('*');
    const preflight = await t.request('OPTIONS', '/api/v1/validate', undefined, { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type');
    expect(preflight.headers.get('ratelimit-limit')).toBeNull(); // a preflight is not counted against the caller
  });

  it('the CORS headers go to CORS requests only; a cacheable answer varies by Origin', async () => {
    const app = await t.post('/api/v1/validate', { licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA' });
    expect(app.status).toBe(200);
    expect(app.headers.get('access-control-allow-origin')).toBeNull();
    expect(app.headers.get('access-control-expose-headers')).toBeNull();
    expect(app.headers.get('x-request-id')).toBeTruthy();
    expect(app.headers.get('x-content-type-options')).toBe('nosniff');
    expect(app.headers.get('vary')).toBeNull(); // a POST answer is not stored by caches
    const nonce = await t.get('/api/v1/nonce');
    expect(nonce.headers.get('access-control-allow-origin')).toBeNull();
    expect(nonce.headers.get('vary')).toBe('Origin');
    const browser = await t.get('/api/v1/nonce', { origin: 'https://app.example' });
    expect(browser.headers.get('access-control-allow-origin')).toBe('*');
    expect(browser.headers.get('vary')).toBe('Origin');
  });

  it('the JWKS can be fetched from any origin (browser applications verify offline tokens)', async () => {
    const jwks = await t.request('GET', '/.well-known/jwks.json', undefined, { origin: 'https://app.example' });
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('access-control-allow-origin')).toBe('*');
    expect(jwks.headers.get('access-control-allow-credentials')).toBeNull();
  });
});
