import { request, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, stopAllProcesses } from './support/processes.js';
import { waitUntil } from './support/wait.js';

/** docs/operate/deployment.md "Graceful shutdown and rolling restarts": SIGTERM drains before the listener closes. A real process over real HTTP. */
const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-drain-'));

afterAll(async () => {
  await stopAllProcesses();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('graceful drain on SIGTERM', () => {
  it('/readyz says 503 at once, new and in-flight requests are served through the drain, then the listener closes and the process exits 0', async () => {
    const server = await startServerProcess({ DATA_DIR: dataDir, DATABASE_URL: '', SERVER_SECRET: '', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_SECONDS: '6' });
    const { hostname, port } = new URL(server.url);

    // A request in flight across the whole shutdown: its body arrives in two halves.
    const body = JSON.stringify({ licenseKey: 'NOT-A-KEY' });
    const inFlight = request({ hostname, port, method: 'POST', path: '/api/v1/validate', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    const answered = new Promise<IncomingMessage>((resolve, reject) => inFlight.once('response', resolve).once('error', reject));
    inFlight.write(body.slice(0, 5));
    await new Promise((resolve) => inFlight.once('socket', (socket) => socket.once('connect', resolve)));

    const exited = server.stop('SIGTERM');
    const readyz = await waitUntil(async () => {
      const response = await fetch(`${server.url}/readyz`);
      return response.status === 503 ? response : undefined;
    }, { what: '/readyz to answer 503' });
    expect(await readyz.json()).toEqual({ status: 'draining' });

    // Still open for new requests while the balancer notices; each answer closes its connection.
    const during = await fetch(`${server.url}/api/v1/nonce`);
    expect(during.status).toBe(200);
    expect(during.headers.get('connection')).toBe('close');
    expect(server.output()).not.toContain('"msg":"stopped"');

    // After the drain the listener closes: new connections are refused while the in-flight request still waits.
    await waitUntil(async () => fetch(`${server.url}/healthz`).then(() => false, () => true), { timeout: 30_000, what: 'the listener to close' });
    expect(server.child.exitCode).toBeNull();

    inFlight.end(body.slice(5));
    const response = await answered;
    const text = await new Promise<string>((resolve) => {
      let data = '';
      response.on('data', (chunk) => (data += chunk)).on('end', () => resolve(data));
    });
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ isValid: false });
    expect(await exited).toBe(0);
    expect(server.output()).toContain('stopped');
  });
});
