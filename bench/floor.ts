// The "floor": the least a validate/activate endpoint must do, on bare node:http + pg, with no framework,
// validation layer, logging or ORM. bench/run.ts compares the real server against it.
// Env: DATABASE_URL, PORT, SERVER_SECRET (the same as the real server's, so the key digests match).
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import pg from 'pg';
import { normalizeLicenseKey } from '../server/src/crypto/license-key.js';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { ACTIVATION_REGISTER, LAST_SEEN_INTERVAL_MS, TOUCH_ACTIVE_DEVICE } from '../server/src/services/licenses/activations.js';
import { SELECT_LICENSE_BY_DIGEST, type LicenseRecord } from '../server/src/services/licenses/license-record.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 }); // the server's default pool size
// Behind a transaction-mode pooler (BENCH_POOLER) named prepared statements cannot work: the floor sends unnamed ones too.
const statementName = (name: string) => (process.env.FLOOR_UNNAMED_STATEMENTS === '1' ? undefined : name);
const secrets = new ServerSecrets(process.env.SERVER_SECRET!);
const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
const kid = await calculateJwkThumbprint(await exportJWK(publicKey)); // same header and issuer as the real server's tokens
const issuer = `http://localhost:${process.env.PORT}`;
const DAY_MS = 86_400_000;

// The server's own license lookup, as the floor's own named prepared statements: the least a lookup can cost on a
// direct connection (the real server runs the same text as a named prepared statement: license-record.ts).
const SELECT_LICENSE = SELECT_LICENSE_BY_DIGEST.prepared;

const iso = (date: Date | null) => date?.toISOString() ?? null;
const digestOf = (licenseKey: unknown) => {
  const key = typeof licenseKey === 'string' ? normalizeLicenseKey(licenseKey) : null;
  return key ? secrets.digest(key) : null;
};

/** The same claims the real server signs into offlineCacheToken. */
function sign(l: LicenseRecord, now: Date, extra: { deviceId?: string; nonce?: string }) {
  let expires = now.getTime() + Math.max(3_600_000, (l.offlineGraceDays ?? 0) * DAY_MS);
  if (l.expiresAt) expires = Math.min(expires, l.expiresAt.getTime());
  return new SignJWT({
    sub: l.id, tenant: l.tenantId, productId: l.productId, product: l.productName, bundleProducts: l.bundleProducts,
    features: l.features, licenseExpiresAt: iso(l.expiresAt), isTrial: l.isTrial, nodeLocked: l.nodeLocked,
    offlineGraceDays: l.offlineGraceDays, maintenanceExpiresAt: iso(l.maintenanceExpiresAt), minVersion: l.minVersion,
    maxVersion: l.maxVersion, ...(extra.deviceId ? { device: extra.deviceId } : {}), ...(extra.nonce ? { nonce: extra.nonce } : {}),
  })
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .setExpirationTime(Math.floor(expires / 1000))
    .sign(privateKey);
}

const notFound = { isValid: false, message: 'License key not found.', errorCode: 'LicenseNotFound' };

async function validate(body: any) {
  const digest = digestOf(body.licenseKey);
  if (!digest) return notFound;
  const { rows } = await pool.query<LicenseRecord>({ name: statementName('license_by_digest'), text: SELECT_LICENSE, values: [digest] });
  const l = rows[0];
  if (!l) return notFound;
  const now = new Date();
  // The device-scoped check (the `device` scenario): the server's own statement, which also refreshes lastSeenAt.
  if (body.requireActivation && typeof body.deviceId === 'string') {
    const device = await pool.query({ name: statementName('touch_active_device'), text: TOUCH_ACTIVE_DEVICE, values: [l.tenantId, l.id, body.deviceId, now, new Date(now.getTime() - LAST_SEEN_INTERVAL_MS)] });
    if (device.rowCount === 0) return { isValid: false, errorCode: 'DeviceNotActivated', message: 'This device holds no activation of the license.' };
  }
  // Same fields as the real response (the test license is active, perpetual, not a trial).
  return {
    isValid: true, errorCode: null, productName: l.productName, remainingActivations: Math.max(0, l.maxActivations - l.currentActivations),
    expiresAt: iso(l.expiresAt), customFields: l.customFields, features: l.features, isTrial: l.isTrial, nodeLocked: l.nodeLocked,
    offlineGraceDays: l.offlineGraceDays, vendorWarning: null, minVersion: l.minVersion, maxVersion: l.maxVersion,
    bundleProducts: l.bundleProducts, isInGracePeriod: null, maintenanceExpiresAt: iso(l.maintenanceExpiresAt),
    offlineCacheToken: await sign(l, now, body),
  };
}

/**
 * The server's one-statement activation: the license read without a lock (named prepared statement), then
 * activation_register, which locks the row, checks it is as read, spends the nonce, takes or reuses the seat, inserts
 * the activation and writes the webhook event, in one statement.
 */
async function activate(body: any, ip: string): Promise<[number, object]> {
  const digest = digestOf(body.licenseKey);
  if (typeof body.nonce !== 'string') return [400, { error: { code: 'NonceRequired' } }];
  const now = new Date();
  const l: LicenseRecord | undefined = digest ? (await pool.query<LicenseRecord>({ name: statementName('license_by_digest'), text: SELECT_LICENSE, values: [digest] })).rows[0] : undefined;
  if (!l) return [200, notFound];
  const activationId = randomUUID();
  const eventId = randomUUID();
  const event = JSON.stringify({ id: eventId, type: 'activation.created', createdAt: now.toISOString(), tenantId: l.tenantId,
    data: { id: activationId, licenseId: l.id, deviceId: body.deviceId ?? null, deviceName: null, createdAt: now.toISOString() } });
  const { rows } = await pool.query<{ outcome: string; seats_used: number; max_activations: number }>({
    name: statementName('activation_register'), text: ACTIVATION_REGISTER,
    values: [l.id, l.status, l.expiresAt, createHash('sha256').update(body.nonce).digest('hex'), now, activationId, body.deviceId ?? null, null, null, null, ip, eventId, event],
  });
  const registration = rows[0];
  if (registration.outcome === 'nonce_invalid') return [422, { error: { code: 'NonceInvalid' } }];
  if (registration.outcome === 'seats_exhausted') return [200, { isValid: false, errorCode: 'SeatsExhausted', message: 'All activations are in use.' }];
  if (registration.outcome === 'changed') return [503, { error: { code: 'ServiceUnavailable' } }];
  return [200, {
    isValid: true, productName: l.productName, remainingActivations: Math.max(0, registration.max_activations - registration.seats_used), expiresAt: iso(l.expiresAt),
    features: l.features, isTrial: l.isTrial, nodeLocked: l.nodeLocked, offlineGraceDays: l.offlineGraceDays, vendorWarning: null,
  }];
}

async function readJson(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/api/v1/validate') return send(res, 200, await validate(await readJson(req)));
    if (req.method === 'POST' && req.url === '/api/v1/activate') {
      const [status, body] = await activate(await readJson(req), req.socket.remoteAddress ?? 'unknown');
      return send(res, status, body);
    }
    if (req.url === '/readyz') {
      await pool.query('select 1');
      return send(res, 200, { status: 'ok' });
    }
    send(res, 404, { error: { code: 'NotFound' } });
  } catch (error) {
    send(res, 500, { error: { code: 'InternalError', message: (error as Error).message } });
  }
}).listen(Number(process.env.PORT), '127.0.0.1');

process.on('SIGTERM', () => void pool.end().finally(() => process.exit(0)));
