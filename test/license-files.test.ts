import { generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyforgeClient, MemoryStore, VerificationError, type JSONWebKeySet } from '../sdk/src/index.js';
import { activateFromRequest, deactivateFromProof, type LicenseFileContext } from '../server/src/services/license-files/index.js';
import { DAY, startTestApp, type TestApp } from './support/harness.js';

/**
 * Signed license files and air-gapped activation, end to end: the SDK writes requests and proofs and verifies files;
 * the real server (GraphQL, REST, the services) takes seats with activation_register and signs the files.
 */
const PRODUCT = 'Acme Studio';
const ISSUER = 'http://licensing.test';

let t: TestApp;
let admin: string;
let tenantId: string;
let productId: string;
let jwks: JSONWebKeySet;
/** The devices' local clock (ms): the server's TestClock unless a test moves it. */
let deviceNow: number;

const ACTIVATE = `mutation($input: ActivateOfflineInput!) { activateOffline(input: $input) { licenseFile expiresAt activationId reused remainingActivations license { id currentActivations } } }`;
const DEACTIVATE = `mutation($input: DeactivateOfflineInput!) { deactivateOffline(input: $input) { activationId deviceId license { id currentActivations } } }`;
const ISSUE = `mutation($input: IssueLicenseFileInput!) { issueLicenseFile(input: $input) { licenseFile issuedAt expiresAt deviceId encrypted } }`;

const client = (options: { store?: MemoryStore; product?: string; keys?: JSONWebKeySet } = {}) =>
  new KeyforgeClient({ baseUrl: t.baseUrl, issuer: ISSUER, product: options.product ?? PRODUCT, jwks: options.keys ?? jwks, store: options.store ?? new MemoryStore(), clock: () => deviceNow });

async function license(attributes: Record<string, unknown> = {}) {
  return t.seedLicense(tenantId, productId, { maxActivations: 3, ...attributes });
}

const fileCtx = (): LicenseFileContext => ({ db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now(), signer: t.deps.signer, issuer: ISSUER });
const code = (response: { errors?: { extensions?: { code?: string } }[] }) => response.errors?.[0]?.extensions?.code;
const rejects = async (promise: Promise<unknown>) => promise.then(() => null, (error: unknown) => error as VerificationError);

/** Armored text with its body re-encoded through `edit` (the base64 payload, decoded and re-encoded whole). */
function reencode(text: string, edit: (payload: string) => string): string {
  const [, label, body] = /-----BEGIN KEYFORGE ([A-Z ]+)-----\n([\s\S]*?)\n-----END/.exec(text)!;
  const edited = Buffer.from(edit(Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8'))).toString('base64');
  return `-----BEGIN KEYFORGE ${label}-----\n${edited.match(/.{1,64}/g)!.join('\n')}\n-----END KEYFORGE ${label}-----\n`;
}

/** A license file whose signed claims are edited (the signature kept): what a tamperer would try. */
function editClaims(file: string, edit: (claims: Record<string, unknown>) => Record<string, unknown>): string {
  return reencode(file, (json) => {
    const envelope = JSON.parse(json);
    const [header, payload, signature] = envelope.token.split('.');
    const claims = edit(JSON.parse(Buffer.from(payload, 'base64url').toString()));
    return JSON.stringify({ ...envelope, token: `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}` });
  });
}

beforeAll(async () => {
  t = await startTestApp();
  const setup = await t.setupAdmin();
  admin = setup.token;
  tenantId = setup.user.tenantId;
  productId = (await t.seedProduct(tenantId, PRODUCT)).id;
  deviceNow = t.clock.now().getTime();
  jwks = (await t.get('/.well-known/jwks.json')).json;
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('air-gapped activation', () => {
  it('request → GraphQL upload → response → applyActivationResponse → validateOffline; then an offline deactivation frees the seat once', async () => {
    const { key, license: created } = await license({ nodeLocked: true });
    const store = new MemoryStore();
    const device = client({ store });
    const { request, compact, deviceId } = await device.createActivationRequest({ licenseKey: key, deviceId: 'air-gapped-lab-pc-1', deviceName: 'Lab PC 1', version: '2.0.0' });
    expect(request).toMatch(/^-----BEGIN KEYFORGE ACTIVATION REQUEST-----\n([A-Za-z0-9+/=]{1,64}\n)+-----END KEYFORGE ACTIVATION REQUEST-----\n$/);
    expect(request).not.toContain(key);
    expect(Buffer.from(request.split('\n').slice(1, -2).join(''), 'base64').toString()).not.toContain(key.slice(5));
    expect(compact.length).toBeLessThan(700);

    const uploaded = await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: admin });
    expect(uploaded.errors).toBeUndefined();
    const answer = uploaded.data.activateOffline;
    expect(answer).toMatchObject({ reused: false, remainingActivations: 2, license: { id: created.id, currentActivations: 1 } });
    const activation = await t.prisma.activation.findUniqueOrThrow({ where: { id: answer.activationId } });
    expect(activation).toMatchObject({ deviceId, deviceName: 'Lab PC 1', version: '2.0.0', deactivatedAt: null });
    expect(activation.devicePublicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId, action: 'ActivateOffline', entityId: activation.id } })).toBe(1);

    const applied = await device.applyActivationResponse(answer.licenseFile);
    expect(applied.entitlement).toMatchObject({ licenseId: created.id, device: deviceId, deviceActivated: true });
    // No offline grace on this license: the file is the grant, until its ttl (the product's default, 30 days).
    const offline = await device.validateOffline({ licenseKey: key, deviceId, requireActivation: true });
    expect(offline.source).toBe('offline');
    expect(offline.offlineUntil.getTime()).toBe(t.clock.now().getTime() + 30 * DAY);
    // A response is applied once.
    expect((await rejects(device.applyActivationResponse(answer.licenseFile)))?.code).toBe('ChallengeMismatch');

    // The clock set back, then past the ttl.
    deviceNow -= 2 * DAY;
    expect((await rejects(device.validateOffline({ licenseKey: key, deviceId })))?.code).toBe('ClockRollback');
    deviceNow += 2 * DAY + 31 * DAY;
    expect((await rejects(device.validateOffline({ licenseKey: key, deviceId })))?.code).toBe('TokenExpired');
    deviceNow = t.clock.now().getTime();

    // The same device asks again (a new file): node-locked reuse, no second seat.
    const again = await device.createActivationRequest({ licenseKey: key, deviceId });
    const reused = (await t.gqlData(ACTIVATE, { input: { licenseId: created.id, request: again.request } }, { token: admin })).activateOffline;
    expect(reused).toMatchObject({ reused: true, activationId: activation.id, license: { currentActivations: 1 } });
    await device.applyActivationResponse(reused.licenseFile);
    // A customer (the portal's path: no rebinding without the key) cannot bind another device key to the active device:
    // a proof signed with it would free the device around the portal's free limit.
    const boundKey = (await t.prisma.activation.findUniqueOrThrow({ where: { id: activation.id } })).devicePublicKey;
    const impostor = await client({ store: new MemoryStore() }).createActivationRequest({ licenseKey: key, deviceId });
    const customer = { id: null, label: 'customer pat@customer.test', ip: null };
    await expect(activateFromRequest(fileCtx(), { tenantId, licenseId: created.id, requestText: impostor.request, actor: customer, mayRebindDevice: false })).rejects.toMatchObject({ code: 'Conflict' });
    expect((await t.prisma.activation.findUniqueOrThrow({ where: { id: activation.id } })).devicePublicKey).toBe(boundKey);

    const { proof, activationId } = await device.deactivateOffline({ licenseKey: key });
    expect(activationId).toBe(activation.id);
    expect(proof).toMatch(/^-----BEGIN KEYFORGE DEACTIVATION PROOF-----\n/);
    expect((await rejects(device.validateOffline({ licenseKey: key })))?.code).toBe('TokenMissing');
    const freed = await t.gql(DEACTIVATE, { input: { licenseId: created.id, proof } }, { token: admin });
    expect(freed.errors).toBeUndefined();
    expect(freed.data.deactivateOffline).toMatchObject({ activationId: activation.id, deviceId, license: { currentActivations: 0 } });
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId, action: 'DeactivateOffline', entityId: activation.id } })).toBe(1);
    // Single use.
    expect(code(await t.gql(DEACTIVATE, { input: { proof } }, { token: admin }))).toBe('Conflict');
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: created.id } })).currentActivations).toBe(0);
  });

  it('the one-line (QR) form is accepted too; a replayed request is refused and takes no second seat', async () => {
    const { key, license: created } = await license();
    const device = client();
    const { compact, request } = await device.createActivationRequest({ licenseKey: key, deviceId: 'qr-device' });
    expect((await t.gql(ACTIVATE, { input: { licenseId: created.id, request: compact } }, { token: admin })).errors).toBeUndefined();
    const replayed = await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: admin });
    expect(code(replayed)).toBe('Conflict');
    expect(replayed.errors![0].message).toMatch(/used already/);
    // Concurrent replays of one new request: exactly one wins.
    const fresh = await device.createActivationRequest({ licenseKey: key, deviceId: 'qr-device-2' });
    const results = await Promise.all(Array.from({ length: 8 }, () => t.gql(ACTIVATE, { input: { licenseId: created.id, request: fresh.request } }, { token: admin })));
    expect(results.filter((result) => !result.errors)).toHaveLength(1);
    expect(results.filter((result) => code(result) === 'Conflict')).toHaveLength(7);
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: created.id } })).currentActivations).toBe(2);
  });

  it('an edited response, a response for another device and a stale response are refused by the SDK', async () => {
    const { key, license: created } = await license();
    const deviceA = client();
    const deviceB = client();
    const requestA = await deviceA.createActivationRequest({ licenseKey: key, deviceId: 'device-a' });
    await deviceB.createActivationRequest({ licenseKey: key, deviceId: 'device-b' });
    const response = (await t.gqlData(ACTIVATE, { input: { licenseId: created.id, request: requestA.request } }, { token: admin })).activateOffline.licenseFile as string;

    // Edited: features added to the signed claims, the token re-assembled.
    const edited = editClaims(response, (claims) => ({ ...claims, features: ['everything'] }));
    expect((await rejects(deviceA.applyActivationResponse(edited)))?.code).toBe('TokenInvalid');
    // A character of the body changed (copy-paste damage): refused, never half-applied.
    const lines = response.split('\n');
    lines[2] = lines[2].slice(0, 10) + (lines[2][10] === 'A' ? 'B' : 'A') + lines[2].slice(11);
    expect((await rejects(deviceA.applyActivationResponse(lines.join('\n'))))).toBeInstanceOf(VerificationError);
    // Truncated.
    expect((await rejects(deviceA.applyActivationResponse(response.slice(0, 200))))?.code).toBe('TokenInvalid');
    // Another device: B's pending request has another challenge.
    expect((await rejects(deviceB.applyActivationResponse(response)))?.code).toBe('ChallengeMismatch');
    expect((await rejects(deviceB.validateOffline({ licenseKey: key })))?.code).toBe('TokenMissing');
    // A newer request replaces the one this answers.
    await deviceA.createActivationRequest({ licenseKey: key, deviceId: 'device-a' });
    expect((await rejects(deviceA.applyActivationResponse(response)))?.code).toBe('ChallengeMismatch');
    // Indented and quoted by a mail client, an intact response still applies (to the request it answers).
    const deviceC = client();
    const requestC = await deviceC.createActivationRequest({ licenseKey: key, deviceId: 'device-c' });
    const responseC = (await t.gqlData(ACTIVATE, { input: { licenseId: created.id, request: requestC.request } }, { token: admin })).activateOffline.licenseFile as string;
    const quoted = `Here is your file:\r\n\r\n${responseC.split('\n').map((line) => `> ${line}`).join('\r\n')}\r\n-- \r\nSupport`;
    expect((await deviceC.applyActivationResponse(quoted)).entitlement.device).toBe('device-c');
  });

  it('forged, altered and foreign deactivation proofs free nothing', async () => {
    const { key, license: created } = await license();
    const other = await license();
    const device = client();
    const { request } = await device.createActivationRequest({ licenseKey: key, deviceId: 'to-free' });
    // A NUL in the request's device id (PostgreSQL cannot store it) is a damaged request, refused before any write.
    const withNul = reencode(request, (json) => JSON.stringify({ ...JSON.parse(json), device: 'to\u0000free' }));
    const refused = await t.gql(ACTIVATE, { input: { licenseId: created.id, request: withNul } }, { token: admin });
    expect(refused.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { request: expect.stringMatching(/cannot be stored/) } });
    const answer = (await t.gqlData(ACTIVATE, { input: { licenseId: created.id, request } }, { token: admin })).activateOffline;
    await device.applyActivationResponse(answer.licenseFile);
    const { proof } = await device.deactivateOffline({ licenseKey: key });
    const jws = Buffer.from(proof.split('\n').slice(1, -2).join(''), 'base64').toString();
    const [header, payload] = jws.split('.');

    // Signed by another key.
    const { privateKey } = generateKeyPairSync('ed25519');
    const forgedSignature = sign(null, Buffer.from(`${header}.${payload}`), privateKey).toString('base64url');
    const forged = reencode(proof, () => `${header}.${payload}.${forgedSignature}`);
    expect(code(await t.gql(DEACTIVATE, { input: { proof: forged } }, { token: admin }))).toBe('InvalidRequest');
    // The payload altered (another device's name): the signature no longer matches.
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const altered = reencode(proof, (text) => text.replace(payload, Buffer.from(JSON.stringify({ ...claims, device: 'someone-else' })).toString('base64url')));
    expect(code(await t.gql(DEACTIVATE, { input: { proof: altered } }, { token: admin }))).toBe('InvalidRequest');
    // A license id that is no UUID (one byte of a copied proof damaged) is refused before any lookup.
    for (const licenseClaim of [`\u00a3${created.id.slice(1)}`, 'not-a-uuid', '']) {
      const damaged = reencode(proof, (text) => text.replace(payload, Buffer.from(JSON.stringify({ ...claims, license: licenseClaim })).toString('base64url')));
      expect(code(await t.gql(DEACTIVATE, { input: { proof: damaged } }, { token: admin }))).toBe('InvalidRequest');
    }
    // Uploaded on another license's page.
    expect(code(await t.gql(DEACTIVATE, { input: { licenseId: other.license.id, proof } }, { token: admin }))).toBe('InvalidRequest');
    // A device activated online has no key on record: no proof can free it.
    const online = await t.activate({ licenseKey: key, deviceId: 'online-device' });
    expect(online.json.isValid).toBe(true);
    const onlineActivation = await t.prisma.activation.findFirstOrThrow({ where: { licenseId: created.id, deviceId: 'online-device' } });
    const aimed = reencode(proof, () => {
      const body = Buffer.from(JSON.stringify({ ...claims, activation: onlineActivation.id, device: 'online-device' })).toString('base64url');
      return `${header}.${body}.${sign(null, Buffer.from(`${header}.${body}`), privateKey).toString('base64url')}`;
    });
    expect(code(await t.gql(DEACTIVATE, { input: { proof: aimed } }, { token: admin }))).toBe('Conflict');
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: created.id } })).currentActivations).toBe(2);
    // The genuine proof still works.
    expect((await t.gql(DEACTIVATE, { input: { proof } }, { token: admin })).errors).toBeUndefined();
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: created.id } })).currentActivations).toBe(1);
  });

  it('a device activated online is reported online, and no request without the key nor any proof frees it', async () => {
    const { key, license: created } = await license();
    const nonce = await t.get('/api/v1/nonce');
    expect(nonce.status).toBe(200);
    const online = await t.post('/api/v1/activate', { licenseKey: key, deviceId: 'online-dev', nonce: nonce.json.nonce });
    expect(online.json.isValid).toBe(true);
    const device = client();
    const { request } = await device.createActivationRequest({ licenseKey: key, deviceId: 'offline-dev' });
    expect((await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: admin })).errors).toBeUndefined();
    const ACTIVATIONS = 'query($id: ID!) { license(id: $id) { activations { nodes { deviceId offline } } } }';
    const listed = async () => (await t.gqlData(ACTIVATIONS, { id: created.id }, { token: admin })).license.activations.nodes;
    expect(await listed()).toEqual(expect.arrayContaining([{ deviceId: 'online-dev', offline: false }, { deviceId: 'offline-dev', offline: true }]));

    // A request naming the online device, uploaded as a customer does (no key): refused, no key bound to it — else a
    // proof signed by the uploader's key would free the online device (around the portal's free limit).
    const impostor = client();
    const aimed = await impostor.createActivationRequest({ licenseKey: key, deviceId: 'online-dev' });
    const customer = { id: null, label: 'customer pat@customer.test', ip: null };
    await expect(activateFromRequest(fileCtx(), { tenantId, licenseId: created.id, requestText: aimed.request, actor: customer, mayRebindDevice: false })).rejects.toMatchObject({
      code: 'Conflict',
      message: expect.stringMatching(/activated online/),
    });
    const onlineActivation = await t.prisma.activation.findFirstOrThrow({ where: { licenseId: created.id, deviceId: 'online-dev' } });
    expect(onlineActivation.devicePublicKey).toBeNull();
    expect(await listed()).toEqual(expect.arrayContaining([{ deviceId: 'online-dev', offline: false }]));
    expect(await t.prisma.activation.count({ where: { licenseId: created.id, deactivatedAt: null } })).toBe(2);

    // With the key (its MAC verified), the holder may move the device to offline activation: it then has a key on record.
    const moved = await t.gql(ACTIVATE, { input: { licenseId: created.id, request: aimed.request, licenseKey: key } }, { token: admin });
    expect(moved.errors).toBeUndefined();
    expect(moved.data.activateOffline).toMatchObject({ reused: true, activationId: onlineActivation.id });
    expect(await listed()).toEqual(expect.arrayContaining([{ deviceId: 'online-dev', offline: true }]));
  });

  it('another company, a read-only member, another key, another product: refused without a seat', async () => {
    const { key, license: created } = await license();
    const device = client();
    const { request } = await device.createActivationRequest({ licenseKey: key, deviceId: 'guarded' });

    const otherTenant = await t.seedTenant({ name: 'Globex', keyPrefix: 'GLBX' });
    await t.seedUser(otherTenant.id, { email: 'admin@globex.test' });
    const globex = (await t.login('admin@globex.test')).token;
    expect(code(await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: globex }))).toBe('NotFound');
    await expect(activateFromRequest(fileCtx(), { tenantId: otherTenant.id, requestText: request, actor: { id: null, label: 'customer x@globex.test', ip: null }, mayRebindDevice: false })).rejects.toMatchObject({ code: 'NotFound' });
    expect(code(await t.gql(ISSUE, { input: { licenseId: created.id } }, { token: globex }))).toBe('NotFound');

    await t.seedUser(tenantId, { email: 'viewer@acme.test', role: 'ReadOnly' });
    const viewer = (await t.login('viewer@acme.test')).token;
    expect(code(await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: viewer }))).toBe('Forbidden');

    // Uploaded on another license's page: its key hint differs.
    const second = await license();
    expect(code(await t.gql(ACTIVATE, { input: { licenseId: second.license.id, request } }, { token: admin }))).toBe('InvalidRequest');
    // With a key: it must be the license's, and the request's MAC must verify under it.
    expect(code(await t.gql(ACTIVATE, { input: { licenseId: created.id, request, licenseKey: second.key } }, { token: admin }))).toBe('InvalidRequest');
    const tampered = reencode(request, (json) => JSON.stringify({ ...JSON.parse(json), name: 'renamed' }));
    const macRefused = await t.gql(ACTIVATE, { input: { licenseId: created.id, request: tampered, licenseKey: key } }, { token: admin });
    expect(code(macRefused)).toBe('InvalidRequest');
    expect(macRefused.errors![0].message).toMatch(/MAC/);
    // Another product's application.
    const otherApp = client({ product: 'Acme Draw' });
    const foreign = await otherApp.createActivationRequest({ licenseKey: key, deviceId: 'draw' });
    const mismatch = await t.gql(ACTIVATE, { input: { licenseId: created.id, request: foreign.request } }, { token: admin });
    expect(code(mismatch)).toBe('Conflict');
    expect(mismatch.errors![0].message).toMatch(/ProductMismatch/);
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: created.id } })).currentActivations).toBe(0);
    // The request itself was not spent: it still works where it belongs, with its MAC checked.
    expect((await t.gql(ACTIVATE, { input: { licenseId: created.id, request, licenseKey: key } }, { token: admin })).errors).toBeUndefined();
  });

  it('a request refused for want of a seat is not spent: it works once a seat is free', async () => {
    const { key, license: created } = await license({ maxActivations: 1 });
    expect((await t.activate({ licenseKey: key, deviceId: 'first' })).json.isValid).toBe(true);
    const { request } = await client().createActivationRequest({ licenseKey: key, deviceId: 'second' });
    const full = await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: admin });
    expect(code(full)).toBe('Conflict');
    expect(full.errors![0].message).toMatch(/SeatsExhausted/);
    expect((await t.post('/api/v1/deactivate', { licenseKey: key, deviceId: 'first' })).json.deactivated).toBe(true);
    expect((await t.gql(ACTIVATE, { input: { licenseId: created.id, request } }, { token: admin })).errors).toBeUndefined();
  });

  it('200 offline and online activations racing on 5 seats: exactly 5 taken', async () => {
    const { key, license: created } = await license({ maxActivations: 5 });
    const requests = await Promise.all(Array.from({ length: 100 }, (_, n) => client().createActivationRequest({ licenseKey: key, deviceId: `offline-${n}` })));
    const ctx = fileCtx();
    const actor = { id: null, label: 'race', ip: null };
    const offline = (n: number) => activateFromRequest(ctx, { tenantId, licenseId: created.id, requestText: requests[n].request, actor, mayRebindDevice: false }).then(() => 'offline', (error: { code?: string }) => error.code ?? 'error');
    const online = (n: number) => t.activate({ licenseKey: key, deviceId: `online-${n}` }).then((answer) => (answer.json?.isValid ? 'online' : (answer.json?.errorCode ?? `http ${answer.status}`)));
    // Interleaved, online first (its nonce round trip makes it the later one to reach the license row).
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, n) => [online(n), offline(n)]).flat());
    const granted = outcomes.filter((outcome) => outcome === 'offline' || outcome === 'online');
    expect(granted).toHaveLength(5);
    expect(outcomes.filter((outcome) => outcome === 'Conflict' || outcome === 'SeatsExhausted')).toHaveLength(195);
    expect(await t.prisma.activation.count({ where: { licenseId: created.id, deactivatedAt: null } })).toBe(5);
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: created.id } })).currentActivations).toBe(5);
    // Only the granted offline requests are recorded as used.
    expect(await t.prisma.offlineActivationRequest.count({ where: { licenseId: created.id } })).toBe(granted.filter((outcome) => outcome === 'offline').length);
  }, 60_000);
});

describe('license files', () => {
  it('issued by staff: verified offline; tampered, wrong device, expired, clock set back and unknown key refused', async () => {
    const { key, license: created } = await license({ features: ['export'], offlineGraceDays: 3 });
    expect((await t.activate({ licenseKey: key, deviceId: 'desk-1' })).json.isValid).toBe(true);
    const device = client();
    const whole = (await t.gqlData(ISSUE, { input: { licenseId: created.id, ttlDays: 10 } }, { token: admin })).issueLicenseFile;
    expect(whole).toMatchObject({ deviceId: null, encrypted: false });
    expect(whole.licenseFile).toMatch(/^-----BEGIN KEYFORGE LICENSE FILE-----\n/);
    const entitlement = await device.verifyLicenseFile(whole.licenseFile, { licenseKey: key });
    expect(entitlement).toMatchObject({ licenseId: created.id, features: ['export'], device: null, deviceActivated: false });
    expect(entitlement.expiresAt.getTime() - entitlement.issuedAt.getTime()).toBe(10 * DAY);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId, action: 'IssueLicenseFile', entityId: created.id } })).toBe(1);

    const bound = (await t.gqlData(ISSUE, { input: { licenseId: created.id, deviceId: 'desk-1' } }, { token: admin })).issueLicenseFile;
    expect((await device.verifyLicenseFile(bound.licenseFile, { deviceId: 'desk-1', requireActivation: true })).deviceActivated).toBe(true);
    expect((await rejects(device.verifyLicenseFile(bound.licenseFile, { deviceId: 'desk-2' })))?.code).toBe('WrongDevice');
    expect((await rejects(device.verifyLicenseFile(whole.licenseFile, { deviceId: 'desk-1' })))?.code).toBe('WrongDevice');
    expect(code(await t.gql(ISSUE, { input: { licenseId: created.id, deviceId: 'never-activated' } }, { token: admin }))).toBe('Conflict');

    const tampered = editClaims(whole.licenseFile, (claims) => ({ ...claims, features: ['export', 'import'] }));
    expect((await rejects(device.verifyLicenseFile(tampered)))?.code).toBe('TokenInvalid');
    deviceNow += 11 * DAY;
    expect((await rejects(device.verifyLicenseFile(whole.licenseFile)))?.code).toBe('TokenExpired');
    deviceNow = t.clock.now().getTime() - DAY;
    expect((await rejects(device.verifyLicenseFile(whole.licenseFile)))?.code).toBe('ClockRollback');
    deviceNow = t.clock.now().getTime();
    // Installed, then the clock set back: the high-water mark of the license refuses it too.
    await device.installLicenseFile(whole.licenseFile, { licenseKey: key });
    expect((await device.validateOffline({ licenseKey: key })).entitlement.features).toEqual(['export']);
    deviceNow += 2 * DAY;
    await device.validateOffline({ licenseKey: key });
    deviceNow -= DAY;
    expect((await rejects(device.verifyLicenseFile(whole.licenseFile, { licenseKey: key })))?.code).toBe('ClockRollback');
    deviceNow = t.clock.now().getTime();

    // A key the application does not trust.
    const { publicKey } = generateKeyPairSync('ed25519');
    const strangerKeys = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'stranger', alg: 'EdDSA' }] } as JSONWebKeySet;
    expect((await rejects(client({ keys: strangerKeys }).verifyLicenseFile(whole.licenseFile)))?.code).toBe('KeyUnknown');
    // Another product's application.
    expect((await rejects(client({ product: 'Acme Draw' }).verifyLicenseFile(whole.licenseFile)))?.code).toBe('WrongProduct');
  });

  it("the product's licenseFileTtlDays sets a file's life, never past the license's expiry", async () => {
    const product = (await t.gqlData('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id licenseFileTtlDays } } }', { input: { name: 'Acme Lab', licenseFileTtlDays: 7 } }, { token: admin })).createProduct.product;
    expect(product.licenseFileTtlDays).toBe(7);
    const { license: short } = await t.seedLicense(tenantId, product.id, { expiresAt: new Date(t.clock.now().getTime() + 3 * DAY) });
    const { license: long } = await t.seedLicense(tenantId, product.id);
    const issue = async (licenseId: string) => (await t.gqlData(ISSUE, { input: { licenseId } }, { token: admin })).issueLicenseFile;
    expect(new Date((await issue(long.id)).expiresAt).getTime()).toBe(t.clock.now().getTime() + 7 * DAY);
    expect(new Date((await issue(short.id)).expiresAt).getTime()).toBe(t.clock.now().getTime() + 3 * DAY);
    const updated = await t.gql('mutation($input: UpdateProductInput!) { updateProduct(input: $input) { product { licenseFileTtlDays } } }', { input: { id: product.id, licenseFileTtlDays: 0 } }, { token: admin });
    expect(code(updated)).toBe('InvalidRequest');
    expect(code(await t.gql(ISSUE, { input: { licenseId: long.id, ttlDays: 4000 } }, { token: admin }))).toBe('InvalidRequest');
  });

  it("a file's ttl is exactly exp - iat, capped at the license's expiry or not, at any sub-second instant", async () => {
    const product = (await t.gqlData('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Ttl', licenseFileTtlDays: 10 } }, { token: admin })).createProduct.product;
    const before = t.clock.now().toISOString();
    const start = Math.floor(t.clock.now().getTime() / 1000) * 1000; // a whole second
    const { license: created } = await t.seedLicense(tenantId, product.id, { expiresAt: new Date(start + 2 * DAY) });
    const claimsOf = (file: string) => {
      const { token } = JSON.parse(Buffer.from(file.split('\n').slice(1, -2).join(''), 'base64').toString());
      return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { iat: number; exp: number; ttl: number };
    };
    const issueAt = async (issuedMs: number, expiresMs: number) => {
      t.clock.set(new Date(issuedMs).toISOString());
      await t.prisma.license.update({ where: { id: created.id }, data: { expiresAt: new Date(expiresMs) } });
      const issued = (await t.gqlData(ISSUE, { input: { licenseId: created.id } }, { token: admin })).issueLicenseFile;
      return { claims: claimsOf(issued.licenseFile), expiresAt: new Date(issued.expiresAt).getTime() };
    };
    try {
      // The case measured: a license expiring in 2 days at .000, the file issued at .337 (capped at the expiry).
      const capped = await issueAt(start + 337, start + 2 * DAY);
      expect(capped.claims.exp - capped.claims.iat).toBe(172_800);
      expect(capped.claims.ttl).toBe(capped.claims.exp - capped.claims.iat);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 1_000, max: 12 * DAY }), async (subSecond, expiresIn) => {
          const issuedMs = start + subSecond;
          const { claims, expiresAt } = await issueAt(issuedMs, issuedMs + expiresIn);
          expect(expiresAt).toBe(Math.min(issuedMs + 10 * DAY, issuedMs + expiresIn));
          expect(claims.iat).toBe(Math.floor(issuedMs / 1000));
          expect(claims.exp).toBe(Math.floor(expiresAt / 1000));
          expect(claims.ttl).toBe(claims.exp - claims.iat);
        }),
        { numRuns: 40 },
      );
    } finally {
      t.clock.set(before);
    }
  });

  it('encrypted files reveal nothing without the key (and the device); the key must be the license\'s', async () => {
    const { key, license: created } = await license({ features: ['secret-feature'], customerEmail: 'buyer@example.test' });
    const other = await license();
    expect((await t.activate({ licenseKey: key, deviceId: 'enc-device' })).json.isValid).toBe(true);
    expect(code(await t.gql(ISSUE, { input: { licenseId: created.id, licenseKey: other.key } }, { token: admin }))).toBe('InvalidRequest');
    const file = (await t.gqlData(ISSUE, { input: { licenseId: created.id, deviceId: 'enc-device', licenseKey: key } }, { token: admin })).issueLicenseFile;
    expect(file.encrypted).toBe(true);
    const body = Buffer.from(file.licenseFile.split('\n').slice(1, -2).join(''), 'base64').toString();
    expect(body).not.toContain('secret-feature');
    expect(body).not.toMatch(/eyJ/); // no JWS segment in clear
    const device = client();
    expect((await device.verifyLicenseFile(file.licenseFile, { licenseKey: key, deviceId: 'enc-device' })).features).toEqual(['secret-feature']);
    expect((await rejects(device.verifyLicenseFile(file.licenseFile, { licenseKey: other.key, deviceId: 'enc-device' })))?.code).toBe('TokenInvalid');
    expect((await rejects(device.verifyLicenseFile(file.licenseFile, { licenseKey: key, deviceId: 'another-device' })))?.code).toBe('TokenInvalid');
    expect((await rejects(device.verifyLicenseFile(file.licenseFile, {})))?.code).toBe('TokenInvalid');
  });

  it('POST /api/v1/license-file: the key (and the device\'s activation) is the right to a file', async () => {
    const { key, license: created } = await license({ offlineGraceDays: 1 });
    expect((await t.activate({ licenseKey: key, deviceId: 'rest-device' })).json.isValid).toBe(true);
    const answer = await t.post('/api/v1/license-file', { licenseKey: key, deviceId: 'rest-device', encrypt: true });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ isValid: true, deviceId: 'rest-device', encrypted: true });
    expect((await client().verifyLicenseFile(answer.json.licenseFile, { licenseKey: key, deviceId: 'rest-device', requireActivation: true })).licenseId).toBe(created.id);
    expect((await t.post('/api/v1/license-file', { licenseKey: key, deviceId: 'not-activated' })).json).toMatchObject({ isValid: false, errorCode: 'DeviceNotActivated' });
    expect((await t.post('/api/v1/license-file', { licenseKey: 'ACME-AAAA-BBBB-CCCC-DDDD' })).json).toMatchObject({ isValid: false, errorCode: 'LicenseNotFound' });
    expect((await t.post('/api/v1/license-file', { licenseKey: key, deviceId: 'x'.repeat(300) })).status).toBe(400);
    // The SDK fetches and installs one: validateOffline then answers from it.
    const sdk = client();
    const fetched = await sdk.fetchLicenseFile({ licenseKey: key, deviceId: 'rest-device', encrypt: true });
    expect(fetched.entitlement).toMatchObject({ licenseId: created.id, device: 'rest-device', deviceActivated: true });
    expect((await sdk.validateOffline({ licenseKey: key, deviceId: 'rest-device', requireActivation: true })).entitlement.claims.kind).toBe('license-file');
    await expect(sdk.fetchLicenseFile({ licenseKey: key, deviceId: 'not-activated' })).rejects.toMatchObject({ code: 'DeviceNotActivated' });
    await t.prisma.license.update({ where: { id: created.id }, data: { status: 'revoked', revokedAt: t.clock.now() } });
    expect((await t.post('/api/v1/license-file', { licenseKey: key })).json).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' });
    expect(code(await t.gql(ISSUE, { input: { licenseId: created.id } }, { token: admin }))).toBe('Conflict');
  });

  it('malformed, oversize and wrong-kind armored input is a clear InvalidRequest', async () => {
    const { key, license: created } = await license();
    const { request } = await client().createActivationRequest({ licenseKey: key, deviceId: 'armor' });
    for (const text of ['', 'hello', request.slice(0, 100), request.replace('ACTIVATION REQUEST', 'LICENSE FILE'), `${request}${'A'.repeat(20_000)}`, 'KFREQ1:!!!', 'KFREQ1:e30']) {
      const answer = await t.gql(ACTIVATE, { input: { licenseId: created.id, request: text } }, { token: admin });
      expect(code(answer), text.slice(0, 40)).toBe('InvalidRequest');
    }
    await expect(deactivateFromProof(fileCtx(), { tenantId, proofText: request, actor: { id: null, label: 'x', ip: null } })).rejects.toMatchObject({ code: 'InvalidRequest' });
  });
});
