import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PORTAL_SCHEMA_FILE, printPortalSdl } from '../server/src/graphql/print-schema.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { updateCompanySettings } from '../server/src/services/company.js';
import { KeyforgeClient, MemoryStore } from '../sdk/src/index.js';
import { startTestApp } from './support/harness.js';

// The customer portal's server side (services/portal, graphql/portal, http/portal.ts): sign-in by an emailed
// single-use link, the portal session, isolation between companies and customers, and freeing devices within the
// product's limit. Real PostgreSQL and HTTP; the clock is the harness's (moved by hand).

type App = Awaited<ReturnType<typeof startTestApp>>;
let t: App;

const PAT = 'Pat@Customer.test';
const pat = PAT.toLowerCase();

interface Vendor {
  tenantId: string;
  handle: string;
  productId: string;
  keys: string[];
  licenseIds: string[];
}
let acme: Vendor;
let globex: Vendor;
let otherKey: string;

/** A POST to a portal's GraphQL endpoint, with the session cookie and client IP given. */
async function portal(handle: string, query: string, variables: Record<string, unknown> = {}, opts: { cookie?: string; ip?: string } = {}) {
  const headers: Record<string, string> = {};
  if (opts.cookie) headers.cookie = opts.cookie;
  headers['x-forwarded-for'] = opts.ip ?? '198.51.100.7';
  const response = await t.post(`/portal/${handle}/graphql`, { query, variables }, headers);
  return {
    ...response,
    data: response.json?.data,
    errors: response.json?.errors as { message: string; extensions?: { code?: string } }[] | undefined,
    cookie: response.headers.get('set-cookie')?.split(';')[0],
    setCookie: response.headers.get('set-cookie'),
  };
}

const REQUEST = 'mutation($email: String!) { requestSignInLink(input: { email: $email }) { email } }';
const SIGN_IN = 'mutation($token: String!) { signIn(input: { token: $token }) { customer { email sessionExpiresAt } } }';
const LICENSES = `{ licenses { id keyHint status productName features seatsUsed seatsTotal floatingSeats floatingInUse renewalUrl
  expiresAt graceEndsAt devices { id name deviceId version lastSeenAt } deviceFrees { limit windowDays used remaining nextAt } } }`;
const FREE = 'mutation($id: ID!) { freeDevice(input: { id: $id }) { license { id seatsUsed devices { id } deviceFrees { remaining } } } }';

/** The newest sign-in email to `to` at a company (outbox), and the token it carries. */
async function latestLink(tenantId: string, to: string) {
  const row = await t.prisma.emailOutbox.findFirst({ where: { tenantId, kind: 'portal-sign-in', toAddress: to }, orderBy: { createdAt: 'desc' } });
  return row && { row, token: t.outboxToken(row), text: t.outboxText(row) };
}

async function signIn(vendor: Vendor, email = PAT, ip?: string) {
  // Past the window of links per address (3 per 15 minutes), so each sign-in of a test gets its email.
  t.clock.advance(16 * 60_000);
  expect((await portal(vendor.handle, REQUEST, { email }, { ip })).errors).toBeUndefined();
  const link = await latestLink(vendor.tenantId, email.toLowerCase());
  expect(link).not.toBeNull();
  const response = await portal(vendor.handle, SIGN_IN, { token: link!.token }, { ip });
  expect(response.errors).toBeUndefined();
  expect(response.setCookie).toMatch(new RegExp(`kf_portal=kfs_[^;]+; .*Path=/portal/${vendor.handle}`, 'i'));
  expect(response.setCookie).toMatch(/HttpOnly/i);
  return response.cookie!;
}

async function vendor(name: string, keyPrefix: string, handle: string, licenses: number): Promise<Vendor> {
  const tenant = await t.seedTenant({ name, keyPrefix });
  await t.prisma.tenant.update({ where: { id: tenant.id }, data: { portalHandle: handle, renewalUrl: `https://${handle}.test/renew`, supportEmail: `help@${handle}.test` } });
  const product = await t.seedProduct(tenant.id, `${name} Studio`);
  await t.prisma.product.update({ where: { id: product.id }, data: { deviceFreeLimit: 2, deviceFreeWindowDays: 30 } });
  const keys: string[] = [];
  const licenseIds: string[] = [];
  for (let i = 0; i < licenses; i++) {
    const { key, license } = await t.seedLicense(tenant.id, product.id, { customerEmail: i === 0 ? PAT : pat, features: ['export'], maxActivations: 5 });
    keys.push(key);
    licenseIds.push(license.id);
  }
  return { tenantId: tenant.id, handle, productId: product.id, keys, licenseIds };
}

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '1000', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '1000' } });
  acme = await vendor('Acme', 'ACME', 'acme', 2);
  globex = await vendor('Globex', 'GLBX', 'globex', 1);
  const other = await t.seedLicense(acme.tenantId, acme.productId, { customerEmail: 'other@customer.test', maxActivations: 3 });
  otherKey = other.key;
  for (const [i, key] of [...acme.keys, ...globex.keys, otherKey].entries()) {
    for (const device of ['a', 'b', 'c', 'd']) expect((await t.activate({ licenseKey: key, deviceId: `dev-${i}-${device}`, deviceName: `Machine ${device.toUpperCase()}`, version: '2.1.0' })).status).toBe(200);
  }
}, 120_000);
afterAll(() => t?.close());

describe('portal: sign-in by an emailed link', () => {
  it('answers the same for a known and an unknown address, and emails only the known one', async () => {
    const before = await t.prisma.emailOutbox.count({ where: { kind: 'portal-sign-in' } });
    const known = await portal('acme', REQUEST, { email: 'other@customer.test' });
    const unknown = await portal('acme', REQUEST, { email: 'nobody@customer.test' });
    expect(known.status).toBe(unknown.status);
    expect(known.data.requestSignInLink).toEqual({ email: 'other@customer.test' });
    expect(unknown.data.requestSignInLink).toEqual({ email: 'nobody@customer.test' });
    expect(await t.prisma.emailOutbox.count({ where: { kind: 'portal-sign-in' } })).toBe(before + 1);
    // A customer of another company only is unknown here.
    const link = await latestLink(acme.tenantId, 'other@customer.test');
    expect(link!.text).toContain(`${t.config.publicUrl}/portal/acme/sign-in#token=kfp_`);
    // The stored email holds a placeholder, not the token; only a digest of the token is stored.
    expect(link!.row.text).toContain('kfp_REDACTED');
    expect(link!.row.text).not.toContain(link!.token);
    const stored = await t.prisma.portalSignInLink.findFirstOrThrow({ where: { tenantId: acme.tenantId, email: 'other@customer.test' } });
    expect(JSON.stringify(stored)).not.toContain(link!.token.slice(4));
  });

  it('a link works once, at its own company only, and for 15 minutes', async () => {
    await portal('acme', REQUEST, { email: PAT });
    const { token } = (await latestLink(acme.tenantId, pat))!;
    // At another company's portal the link is nothing (and stays usable at its own).
    expect((await portal('globex', SIGN_IN, { token })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    const first = await portal('acme', SIGN_IN, { token });
    expect(first.data.signIn.customer.email).toBe(pat);
    const again = await portal('acme', SIGN_IN, { token });
    expect(again.errors?.[0]).toMatchObject({ message: expect.stringMatching(/invalid, used or expired/), extensions: { code: 'InvalidRequest' } });

    await portal('acme', REQUEST, { email: 'other@customer.test' });
    const late = (await latestLink(acme.tenantId, 'other@customer.test'))!.token;
    t.clock.advance(15 * 60_000 + 1);
    expect((await portal('acme', SIGN_IN, { token: late })).errors?.[0].extensions?.code).toBe('InvalidRequest');
  });

  it('sends at most 3 links per address in 15 minutes, answering the same', async () => {
    t.clock.advance(16 * 60_000);
    const count = () => t.prisma.emailOutbox.count({ where: { tenantId: globex.tenantId, kind: 'portal-sign-in', toAddress: pat } });
    const before = await count();
    for (let i = 0; i < 5; i++) expect((await portal('globex', REQUEST, { email: PAT })).data.requestSignInLink.email).toBe(pat);
    expect((await count()) - before).toBe(3);
  });

  it('an unknown handle or a portal switched off answers 404', async () => {
    expect((await portal('nope', '{ portal { name } }')).status).toBe(404);
    expect((await portal('ACME!', '{ portal { name } }')).status).toBe(404);
    const branding = await portal('acme', '{ portal { name handle supportEmail accentColor logoUrl } }');
    expect(branding.data.portal).toEqual({ name: 'Acme', handle: 'acme', supportEmail: 'help@acme.test', accentColor: null, logoUrl: null });
  });

  it('a signed-out caller sees no licenses', async () => {
    const response = await portal('acme', LICENSES);
    expect(response.errors?.[0].extensions?.code).toBe('Unauthorized');
    expect((await portal('acme', '{ me { email } }')).data.me).toBeNull();
  });
});

describe('portal: isolation', () => {
  it('a customer of two vendors signs in twice and never sees the other vendor’s data', async () => {
    const atAcme = await signIn(acme);
    const atGlobex = await signIn(globex);
    const acmeLicenses = (await portal('acme', LICENSES, {}, { cookie: atAcme })).data.licenses;
    const globexLicenses = (await portal('globex', LICENSES, {}, { cookie: atGlobex })).data.licenses;
    expect(acmeLicenses.map((license: { id: string }) => license.id).sort()).toEqual([...acme.licenseIds].sort());
    expect(globexLicenses.map((license: { id: string }) => license.id)).toEqual(globex.licenseIds);
    expect(acmeLicenses[0]).toMatchObject({ productName: 'Acme Studio', status: 'ACTIVE', features: ['export'], seatsUsed: 4, seatsTotal: 5, renewalUrl: 'https://acme.test/renew' });
    expect(acmeLicenses[0].devices).toHaveLength(4);
    expect(acmeLicenses[0].devices[0]).toMatchObject({ name: expect.stringMatching(/^Machine /), version: '2.1.0' });
    expect(acmeLicenses[0].deviceFrees).toEqual({ limit: 2, windowDays: 30, used: 0, remaining: 2, nextAt: null });
    // Another customer of the same company is not in the list (its key is not the customer's).
    expect(JSON.stringify(acmeLicenses)).not.toContain('other@customer.test');

    // Each session is for its company only: used at the other company's portal, it is no session at all.
    expect((await portal('globex', LICENSES, {}, { cookie: atAcme })).errors?.[0].extensions?.code).toBe('Unauthorized');
    expect((await portal('acme', '{ me { email } }', {}, { cookie: atGlobex })).data.me).toBeNull();
    // And never a staff credential: not as a cookie, not as a bearer token.
    const token = atAcme.split('=')[1];
    expect((await t.gql('{ licenses(first: 1) { totalCount } }', {}, { cookie: atAcme })).errors?.[0].extensions?.code).toBe('Unauthorized');
    const bearer = await t.gql('{ licenses(first: 1) { totalCount } }', {}, { token });
    expect(bearer.status === 401 || bearer.errors?.[0].extensions?.code === 'Unauthorized').toBe(true);

    // A device of another vendor, or of another customer of the same vendor, cannot be freed.
    const globexDevice = globexLicenses[0].devices[0].id;
    expect((await portal('acme', FREE, { id: globexDevice }, { cookie: atAcme })).errors?.[0].extensions?.code).toBe('NotFound');
    const otherDevice = await t.prisma.activation.findFirstOrThrow({ where: { tenantId: acme.tenantId, license: { customerEmail: 'other@customer.test' } } });
    expect((await portal('acme', FREE, { id: otherDevice.id }, { cookie: atAcme })).errors?.[0].extensions?.code).toBe('NotFound');
    expect(await t.prisma.activation.count({ where: { id: { in: [globexDevice, otherDevice.id] }, deactivatedAt: { not: null } } })).toBe(0);
  });

  it('the key is shown only as the customer re-enters it: confirmLicenseKey', async () => {
    const cookie = await signIn(acme);
    const confirm = 'mutation($l: ID!, $k: String!) { confirmLicenseKey(input: { licenseId: $l, key: $k }) { matches } }';
    expect((await portal('acme', confirm, { l: acme.licenseIds[0], k: acme.keys[0] }, { cookie })).data.confirmLicenseKey.matches).toBe(true);
    expect((await portal('acme', confirm, { l: acme.licenseIds[0], k: acme.keys[1] }, { cookie })).data.confirmLicenseKey.matches).toBe(false);
    expect((await portal('acme', confirm, { l: acme.licenseIds[0], k: otherKey }, { cookie })).data.confirmLicenseKey.matches).toBe(false);
    // Another customer's license is not found, whatever the key.
    const other = await t.prisma.license.findFirstOrThrow({ where: { tenantId: acme.tenantId, customerEmail: 'other@customer.test' } });
    expect((await portal('acme', confirm, { l: other.id, k: otherKey }, { cookie })).errors?.[0].extensions?.code).toBe('NotFound');
    const licenses = JSON.stringify((await portal('acme', LICENSES, {}, { cookie })).data);
    for (const key of acme.keys) expect(licenses).not.toContain(key);
  });
});

describe('portal: freeing devices', () => {
  it('frees within the product’s limit, as the console does (webhook event, activity entry as the customer)', async () => {
    await t.prisma.webhookEndpoint.create({ data: { tenantId: acme.tenantId, url: 'https://hooks.acme.test/keyforge', eventTypes: ['activation.deactivated'], secretEncrypted: t.deps.secrets.encrypt('whsec_test') } });
    const cookie = await signIn(acme);
    const [license] = (await portal('acme', LICENSES, {}, { cookie })).data.licenses;
    const [first, second, third] = license.devices;
    const freed = await portal('acme', FREE, { id: first.id }, { cookie });
    expect(freed.errors).toBeUndefined();
    expect(freed.data.freeDevice.license).toMatchObject({ seatsUsed: 3, deviceFrees: { remaining: 1 } });
    expect(freed.data.freeDevice.license.devices.map((device: { id: string }) => device.id)).not.toContain(first.id);

    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { tenantId: acme.tenantId, action: 'DeactivateActivation', entityId: first.id } });
    expect(entry.actor).toBe(`customer ${pat}`);
    const events = await t.prisma.webhookEvent.findMany({ where: { tenantId: acme.tenantId, type: 'activation.deactivated' } });
    expect(events.some((event) => JSON.stringify(event.body).includes(first.id))).toBe(true);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId: acme.tenantId, action: 'CustomerSignIn', actor: `customer ${pat}` } })).toBeGreaterThan(0);

    // Two more at once with one left: exactly one is freed, the other refused with the limit.
    const [a, b] = await Promise.all([portal('acme', FREE, { id: second.id }, { cookie }), portal('acme', FREE, { id: third.id }, { cookie })]);
    const refused = [a, b].filter((response) => response.errors);
    expect(refused).toHaveLength(1);
    expect(refused[0].errors![0]).toMatchObject({ message: expect.stringMatching(/freed 2 devices .* last 30 days/), extensions: { code: 'Forbidden' } });
    expect(await t.prisma.activation.count({ where: { licenseId: license.id, deactivatedAt: null } })).toBe(2);
    const allowance = (await portal('acme', LICENSES, {}, { cookie })).data.licenses.find((l: { id: string }) => l.id === license.id).deviceFrees;
    expect(allowance).toMatchObject({ used: 2, remaining: 0, nextAt: expect.any(String) });

    // The window counts per product for the customer: after 30 days the frees no longer count.
    t.clock.advance(30 * 24 * 60 * 60_000 + 1000);
    const fresh = await signIn(acme);
    const later = (await portal('acme', LICENSES, {}, { cookie: fresh })).data.licenses.find((l: { id: string }) => l.id === license.id);
    expect(later.deviceFrees).toMatchObject({ used: 0, remaining: 2 });
  });

  it('a product without a limit cannot free devices here', async () => {
    await t.prisma.product.update({ where: { id: globex.productId }, data: { deviceFreeLimit: null } });
    const cookie = await signIn(globex);
    const [license] = (await portal('globex', LICENSES, {}, { cookie })).data.licenses;
    expect(license.deviceFrees).toBeNull();
    expect((await portal('globex', FREE, { id: license.devices[0].id }, { cookie })).errors?.[0].extensions?.code).toBe('Forbidden');
  });
});

describe('portal: sessions', () => {
  it('sign out ends this session; sign out everywhere ends every session of the customer at this company', async () => {
    const one = await signIn(acme);
    const two = await signIn(acme);
    const elsewhere = await signIn(globex);
    const out = await portal('acme', 'mutation { signOut(input: {}) { sessionsEnded } }', {}, { cookie: one });
    expect(out.data.signOut.sessionsEnded).toBe(1);
    expect(out.setCookie).toMatch(/kf_portal=;/);
    expect((await portal('acme', '{ me { email } }', {}, { cookie: one })).data.me).toBeNull();
    expect((await portal('acme', '{ me { email } }', {}, { cookie: two })).data.me).toEqual({ email: pat });
    const three = await signIn(acme);
    const everywhere = await portal('acme', 'mutation { signOut(input: { everywhere: true }) { sessionsEnded } }', {}, { cookie: two });
    expect(everywhere.data.signOut.sessionsEnded).toBeGreaterThanOrEqual(2);
    expect((await portal('acme', '{ me { email } }', {}, { cookie: three })).data.me).toBeNull();
    // Another company's session of the same address is not touched.
    expect((await portal('globex', '{ me { email } }', {}, { cookie: elsewhere })).data.me).toEqual({ email: pat });
  });

  it('a session ends after 8 hours, with no refresh', async () => {
    const cookie = await signIn(acme);
    t.clock.advance(8 * 60 * 60_000 + 1);
    expect((await portal('acme', '{ me { email } }', {}, { cookie })).data.me).toBeNull();
  });

  it('a session stops when the customer no longer has licenses there', async () => {
    const cookie = await signIn(acme, 'other@customer.test');
    await t.prisma.license.updateMany({ where: { tenantId: acme.tenantId, customerEmail: 'other@customer.test' }, data: { customerEmail: 'moved@customer.test' } });
    expect((await portal('acme', LICENSES, {}, { cookie })).data.licenses).toEqual([]);
  });
});

describe('portal: rate limits', () => {
  it('link requests are limited per address and per client IP (429 + Retry-After)', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '6', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '3' } });
    try {
      const tenant = await limited.seedTenant({ name: 'Initech', keyPrefix: 'INIT' });
      await limited.prisma.tenant.update({ where: { id: tenant.id }, data: { portalHandle: 'initech' } });
      const ask = (email: string, ip: string) => limited.post('/portal/initech/graphql', { query: REQUEST, variables: { email } }, { 'x-forwarded-for': ip });
      // Per address: the 4th request for one address is refused, from any IP.
      for (let i = 0; i < 3; i++) expect((await ask('a@x.test', `192.0.2.${i + 1}`)).status).toBe(200);
      const perAddress = await ask('a@x.test', '192.0.2.50');
      expect(perAddress.status).toBe(429);
      expect(perAddress.headers.get('retry-after')).toMatch(/^\d+$/);
      // Per IP: the 7th request from one IP is refused, whatever the address.
      for (let i = 0; i < 6; i++) expect((await ask(`u${i}@x.test`, '192.0.2.99')).status).toBe(200);
      expect((await ask('u9@x.test', '192.0.2.99')).status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('portal: license files and machines without internet', () => {
  const DOWNLOAD = 'mutation($l: ID!, $d: ID) { downloadLicenseFile(input: { licenseId: $l, deviceId: $d }) { licenseFile expiresAt deviceId encrypted } }';
  const UPLOAD = 'mutation($l: ID!, $r: String!) { uploadActivationRequest(input: { licenseId: $l, request: $r }) { licenseFile deviceId } }';
  const PROOF = 'mutation($l: ID!, $p: String!) { uploadDeactivationProof(input: { licenseId: $l, proof: $p }) { license { id seatsUsed devices { deviceId } } } }';

  it('a customer downloads a device file of their own license only; the file verifies offline with the SDK', async () => {
    const cookie = await signIn(globex);
    const [license] = (await portal('globex', LICENSES, {}, { cookie })).data.licenses;
    const device = license.devices[0];
    const answer = await portal('globex', DOWNLOAD, { l: license.id, d: device.id }, { cookie });
    expect(answer.errors).toBeUndefined();
    const file = answer.data.downloadLicenseFile;
    expect(file).toMatchObject({ deviceId: device.deviceId, encrypted: false });
    expect(file.licenseFile).toMatch(/^-----BEGIN KEYFORGE LICENSE FILE-----\n/);
    const jwks = (await t.get('/.well-known/jwks.json')).json;
    const sdk = new KeyforgeClient({ baseUrl: t.baseUrl, issuer: t.config.publicUrl, product: 'Globex Studio', jwks, store: new MemoryStore(), clock: () => t.clock.now().getTime() });
    const entitlement = await sdk.verifyLicenseFile(file.licenseFile, { licenseKey: globex.keys[0], deviceId: device.deviceId });
    expect(entitlement).toMatchObject({ licenseId: license.id, device: device.deviceId, deviceActivated: true });
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { tenantId: globex.tenantId, action: 'IssueLicenseFile' }, orderBy: { seq: 'desc' } });
    expect(entry.actor).toBe(`customer ${pat}`);

    // Another vendor's license, another customer's, a device of another license: none of the customer's.
    expect((await portal('globex', DOWNLOAD, { l: acme.licenseIds[0], d: null }, { cookie })).errors?.[0].extensions?.code).toBe('NotFound');
    const acmeDevice = await t.prisma.activation.findFirstOrThrow({ where: { licenseId: acme.licenseIds[0], deactivatedAt: null } });
    expect((await portal('globex', DOWNLOAD, { l: license.id, d: acmeDevice.id }, { cookie })).errors?.[0].extensions?.code).toBe('NotFound');
  });

  it('a machine without internet: its activation request uploaded in the portal takes a seat; its deactivation proof frees it', async () => {
    const cookie = await signIn(globex);
    const [license] = (await portal('globex', LICENSES, {}, { cookie })).data.licenses;
    const jwks = (await t.get('/.well-known/jwks.json')).json;
    const machine = new KeyforgeClient({ baseUrl: t.baseUrl, issuer: t.config.publicUrl, product: 'Globex Studio', jwks, store: new MemoryStore(), clock: () => t.clock.now().getTime() });
    const { request, deviceId } = await machine.createActivationRequest({ licenseKey: globex.keys[0], deviceId: 'lab-pc-7', deviceName: 'Lab PC 7' });
    const uploaded = await portal('globex', UPLOAD, { l: license.id, r: request }, { cookie });
    expect(uploaded.errors).toBeUndefined();
    expect(uploaded.data.uploadActivationRequest.deviceId).toBe(deviceId);
    const applied = await machine.applyActivationResponse(uploaded.data.uploadActivationRequest.licenseFile);
    expect(applied.entitlement).toMatchObject({ licenseId: license.id, device: deviceId, deviceActivated: true });
    // The same request again is refused (single use); at another customer's license it is not found.
    expect((await portal('globex', UPLOAD, { l: license.id, r: request }, { cookie })).errors?.[0].extensions?.code).toBe('Conflict');
    expect((await portal('globex', UPLOAD, { l: acme.licenseIds[0], r: request }, { cookie })).errors?.[0].extensions?.code).toBe('NotFound');

    const { proof } = await machine.deactivateOffline({ licenseKey: globex.keys[0] });
    const freed = await portal('globex', PROOF, { l: license.id, p: proof }, { cookie });
    expect(freed.errors).toBeUndefined();
    expect(freed.data.uploadDeactivationProof.license.devices.map((device: { deviceId: string }) => device.deviceId)).not.toContain(deviceId);
    expect((await portal('globex', PROOF, { l: license.id, p: proof }, { cookie })).errors?.[0].extensions?.code).toMatch(/Conflict|NotFound|InvalidRequest/);
  });

  it('a device activated online cannot be freed by an uploaded request and proof (around the free limit)', async () => {
    const cookie = await signIn(globex);
    const [license] = (await portal('globex', LICENSES, {}, { cookie })).data.licenses;
    const online = license.devices.find((device: { deviceId: string }) => device.deviceId.startsWith('dev-'));
    const jwks = (await t.get('/.well-known/jwks.json')).json;
    const impostor = new KeyforgeClient({ baseUrl: t.baseUrl, issuer: t.config.publicUrl, product: 'Globex Studio', jwks, store: new MemoryStore(), clock: () => t.clock.now().getTime() });
    // A request naming the online device, without the key: binding a key to it would let the proof below free it.
    const { request } = await impostor.createActivationRequest({ licenseKey: globex.keys[0], deviceId: online.deviceId });
    const uploaded = await portal('globex', UPLOAD, { l: license.id, r: request }, { cookie });
    expect(uploaded.errors?.[0].extensions?.code).toBe('Conflict');
    expect(uploaded.errors?.[0].message).toMatch(/activated online/);
    expect((await t.prisma.activation.findUniqueOrThrow({ where: { id: online.id } })).devicePublicKey).toBeNull();
    const after = (await portal('globex', LICENSES, {}, { cookie })).data.licenses[0];
    expect(after.devices.map((device: { id: string }) => device.id)).toContain(online.id);
    expect(after.seatsUsed).toBe(license.seatsUsed);
  });
});

describe('portal: its schema', () => {
  it('is the committed server/portal-schema.graphql (pnpm schema:print), and holds no staff type', () => {
    const sdl = printPortalSdl();
    expect(readFileSync(PORTAL_SCHEMA_FILE, 'utf8')).toBe(sdl);
    for (const staff of ['User', 'ApiKey', 'WebhookEndpoint', 'Company', 'licenseKey', 'customerEmail', 'activityLog']) expect(sdl).not.toMatch(new RegExp(`\\b${staff}\\b`));
  });
});

describe('portal: the vendor’s settings', () => {
  const settings = (tenantId: string, input: Parameters<typeof updateCompanySettings>[1]) =>
    updateCompanySettings({ db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now(), actor: systemActor(tenantId, 'system (test)'), meta: NO_META }, input);
  const refusal = (promise: Promise<unknown>) => promise.then(() => null, (error: { code?: string; details?: { fields?: Record<string, string> } }) => ({ code: error.code, fields: Object.keys(error.details?.fields ?? {}) }));

  it('a handle is unique, well-formed and not reserved; the logo is https and the colour #rrggbb', async () => {
    expect(await refusal(settings(acme.tenantId, { portalHandle: 'globex' }))).toEqual({ code: 'Conflict', fields: ['portalHandle'] });
    expect(await refusal(settings(acme.tenantId, { portalHandle: 'graphql' }))).toMatchObject({ code: 'InvalidRequest' });
    expect(await refusal(settings(acme.tenantId, { portalHandle: '-acme' }))).toMatchObject({ code: 'InvalidRequest' });
    expect(await refusal(settings(acme.tenantId, { portalLogoUrl: 'http://acme.test/logo.png' }))).toMatchObject({ code: 'InvalidRequest' });
    expect(await refusal(settings(acme.tenantId, { portalAccentColor: 'red' }))).toMatchObject({ code: 'InvalidRequest' });
    const saved = await settings(acme.tenantId, { portalHandle: ' Acme-Labs ', portalAccentColor: '#0B7285', portalLogoUrl: 'https://acme.test/logo.svg' });
    expect(saved).toMatchObject({ portalHandle: 'acme-labs', portalAccentColor: '#0b7285', portalLogoUrl: 'https://acme.test/logo.svg' });
    // The old handle answers 404 at once; the new one serves the portal with its branding.
    expect((await portal('acme', '{ portal { name } }')).status).toBe(404);
    expect((await portal('acme-labs', '{ portal { accentColor logoUrl } }')).data.portal).toEqual({ accentColor: '#0b7285', logoUrl: 'https://acme.test/logo.svg' });
    // Empty turns the portal off.
    await settings(acme.tenantId, { portalHandle: '' });
    expect((await portal('acme-labs', '{ portal { name } }')).status).toBe(404);
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { tenantId: acme.tenantId, action: 'UpdateCompanySettings' }, orderBy: { seq: 'desc' } });
    expect(entry.details).toMatchObject({ before: { portalHandle: 'acme-labs' }, after: { portalHandle: null } });
  });
});
