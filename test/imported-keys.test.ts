import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalLicenseKey, IMPORTED_KEY_MAX_LENGTH, IMPORTED_KEY_MIN_LENGTH, isKeyforgeKey, licenseKeyHint } from '../server/src/crypto/license-key.js';
import { checkLicenseImport } from '../server/src/services/licenses/import.js';
import { KEY_UNUSABLE } from '../server/src/services/licenses/management.js';
import { adminContext } from './support/tenants.js';
import { tokenPlaceholder } from '../server/src/services/notifications/sealed-token.js';
import { encodeRequest, keyHint, openLicenseFile, requestMac } from '../sdk/src/license-files.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Keys of any format: a product with allowImportedKeys takes licenses created with a key the vendor issued elsewhere
// (docs/integrate/license-keys.md "Imported keys"), stored and found like a Keyforge key.

describe('canonical license keys', () => {
  it('are a Keyforge key normalised, else an imported key as given, trimmed and case-sensitive', () => {
    expect(canonicalLicenseKey(' acme-abcd - efgh-jkmn-pqrs\n')).toBe('ACME-ABCD-EFGH-JKMN-PQRS');
    expect(canonicalLicenseKey('  4A1B-c2d3-E4F5-g6h7 \t')).toBe('4A1B-c2d3-E4F5-g6h7');
    expect(canonicalLicenseKey('key/with+symbols=~!')).toBe('key/with+symbols=~!');
    expect(canonicalLicenseKey('x'.repeat(IMPORTED_KEY_MIN_LENGTH))).toBe('x'.repeat(IMPORTED_KEY_MIN_LENGTH));
    expect(canonicalLicenseKey('x'.repeat(IMPORTED_KEY_MAX_LENGTH))).toBe('x'.repeat(IMPORTED_KEY_MAX_LENGTH));
    // A key in Keyforge's shape is always the Keyforge key, whatever its case: "acme-…" cannot be a second key.
    expect(canonicalLicenseKey('acme-abcd-efgh-jkmn-pqrs')).toBe('ACME-ABCD-EFGH-JKMN-PQRS');
    expect(isKeyforgeKey('ACME-ABCD-EFGH-JKMN-PQRS')).toBe(true);
    expect(isKeyforgeKey('4A1B-c2d3-E4F5-g6h7')).toBe(false);
  });

  it('refuse what is no key of any format: too short or long, white space inside, control characters, non-ASCII', () => {
    for (const bad of ['', 'short', 'x'.repeat(IMPORTED_KEY_MIN_LENGTH - 1), 'x'.repeat(IMPORTED_KEY_MAX_LENGTH + 1), 'two words here', 'tab\there-1234', 'nul\u0000key-1234', 'del\u007fkey-1234', 'clé-licence-1234', 'key\u00a0nbsp-1234', '🔑🔑🔑🔑🔑🔑🔑🔑']) {
      expect(canonicalLicenseKey(bad), JSON.stringify(bad)).toBeNull();
    }
    // A hundred times the longest key is refused like any other (the checks are linear regular expressions).
    expect(canonicalLicenseKey('k'.repeat(100 * IMPORTED_KEY_MAX_LENGTH))).toBeNull();
    expect(canonicalLicenseKey(`ACME-ABCD-EFGH-JKMN-PQRS${' '.repeat(100_000)}`)).toBe('ACME-ABCD-EFGH-JKMN-PQRS');
  });

  it('an email placeholder never shows any of an imported key', () => {
    expect(tokenPlaceholder('ACME-ABCD-EFGH-JKMN-PQRS')).toBe('ACME-REDACTED');
    expect(tokenPlaceholder('LEGACY-0001-secret')).toBe('REDACTED');
  });

  it('hint at most a quarter of an imported key', () => {
    expect(licenseKeyHint('ACME-ABCD-EFGH-JKMN-PQRS')).toBe('ACME-…-PQRS');
    expect(licenseKeyHint('4A1B-c2d3-E4F5-g6h7')).toBe('4A1B…g6h7');
    expect(licenseKeyHint('abcdefghijklmno')).toBe('…no');
    expect(licenseKeyHint('abcdefgh')).toBe('…gh');
  });
});

describe('licenses with imported keys', () => {
  let t: TestApp;
  let A: SeededTenant;
  let B: SeededTenant;
  let importing: string;
  const CREATE = 'mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id keyHint } } }';
  const create = (tenant: SeededTenant, productId: string, key?: string) => t.gql(CREATE, { input: { productId, maxActivations: 2, ...(key !== undefined && { key }) } }, { token: tenant.admin.token });

  beforeAll(async () => {
    t = await startTestApp();
    ({ A, B } = await seedTwoTenants(t));
    const created = await t.gqlData('mutation { createProduct(input: { name: "Legacy", allowImportedKeys: true }) { product { id allowImportedKeys } } }', {}, { token: A.admin.token });
    expect(created.createProduct.product.allowImportedKeys).toBe(true);
    importing = created.createProduct.product.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates a license with the vendor’s key, stores only its digest and a hint, and the key activates and validates', async () => {
    const key = 'LEGACY-7f3a9c2e-0b1d-4e8f-a6c5-123456789abc';
    const response = await create(A, importing, `  ${key}\n`);
    expect(response.errors).toBeUndefined();
    expect(response.data.createLicense.key).toBe(key);
    expect(response.data.createLicense.license.keyHint).toBe('LEGA…9abc');
    const row = await t.prisma.license.findUniqueOrThrow({ where: { id: response.data.createLicense.license.id } });
    expect(JSON.stringify(row)).not.toContain(key);
    expect(t.logs.join('')).not.toContain(key);

    const activated = await t.activate({ licenseKey: key, deviceId: 'device-imported-1', productName: 'Legacy' });
    expect(activated.status, activated.text).toBe(200);
    const validated = await t.post('/api/v1/validate', { licenseKey: ` ${key} `, deviceId: 'device-imported-1' });
    expect(validated.json.isValid, validated.text).toBe(true);
    // Case-sensitive: another case is another key, which no license has.
    const otherCase = await t.post('/api/v1/validate', { licenseKey: key.toLowerCase() });
    expect(otherCase.json).toMatchObject({ isValid: false, errorCode: 'LicenseNotFound' });
    expect(t.logs.join('')).not.toContain(key);
  });

  it('refuses a key of another format for a product that does not accept imported keys, and garbage for any product', async () => {
    const refused = await create(A, A.product!.id, 'LEGACY-not-allowed-here-0001');
    expect(refused.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { key: expect.stringContaining('does not accept imported keys') } });
    expect(refused.errors?.[0].message).not.toContain('LEGACY-not-allowed-here-0001');
    for (const garbage of ['short', 'has white space', 'x'.repeat(IMPORTED_KEY_MAX_LENGTH + 1), 'ctrl\u0007char-0001', 'ünïcode-key-0001']) {
      const response = await create(A, importing, garbage);
      expect(response.errors?.[0].extensions, JSON.stringify(garbage)).toMatchObject({ code: 'InvalidRequest', fields: { key: expect.stringContaining('is not a license key') } });
    }
    // A Keyforge key is accepted for any product, with the company's prefix.
    const own = await create(A, A.product!.id, 'acme-abcd-efgh-jkmn-pqr2');
    expect(own.data?.createLicense.key).toBe('ACME-ABCD-EFGH-JKMN-PQR2');
    const foreignPrefix = await create(A, A.product!.id, 'GLBX-ABCD-EFGH-JKMN-PQR3');
    expect(foreignPrefix.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { key: expect.stringContaining('prefix ACME-') } });
    expect(await t.prisma.license.count({ where: { productId: A.product!.id, keyHint: { not: { startsWith: 'ACME-' } } } })).toBe(0);
  });

  it('refuses a key any license has, in this company or another, with one message that does not say which', async () => {
    const importingB = (await t.gqlData('mutation { createProduct(input: { name: "Legacy B", allowImportedKeys: true }) { product { id } } }', {}, { token: B.admin.token })).createProduct.product.id;
    const shared = 'SHARED-KEY-0000-1111';
    expect((await create(A, importing, shared)).errors).toBeUndefined();
    const again = await create(B, importingB, shared);
    expect(again.errors?.[0]).toMatchObject({ message: KEY_UNUSABLE, extensions: { code: 'Conflict' } });
    const same = await create(A, importing, shared);
    expect(same.errors?.[0]).toMatchObject({ message: KEY_UNUSABLE, extensions: { code: 'Conflict' } });
    // Another company's Keyforge key, typed in any case (it normalises to that key), as an imported key.
    const theirs = B.licenses[0].key;
    const taken = await create(A, importing, theirs.toLowerCase());
    expect(taken.errors?.[0]).toMatchObject({ message: KEY_UNUSABLE, extensions: { code: 'Conflict' } });
    // A case variant of an imported key is another key.
    expect((await create(B, importingB, shared.toLowerCase())).errors).toBeUndefined();
    const validated = await t.post('/api/v1/validate', { licenseKey: shared.toLowerCase() });
    expect(validated.json.isValid).toBe(true);
    expect(validated.json.productName).toBe('Legacy B');
  });

  it('keeps existing imported keys working when the product stops accepting new ones', async () => {
    const key = 'keeps-working-after-off';
    expect((await create(A, importing, key)).errors).toBeUndefined();
    await t.gqlData('mutation($id: ID!) { updateProduct(input: { id: $id, allowImportedKeys: false }) { product { allowImportedKeys } } }', { id: importing }, { token: A.admin.token });
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json.isValid).toBe(true);
    const refused = await create(A, importing, 'new-after-turned-off');
    expect(refused.errors?.[0].extensions?.code).toBe('InvalidRequest');
    await t.gqlData('mutation($id: ID!) { updateProduct(input: { id: $id, allowImportedKeys: true }) { product { allowImportedKeys } } }', { id: importing }, { token: A.admin.token });
  });

  it('every public path finds a license by its imported key: deactivate, floating, metering, license files, air-gapped', async () => {
    const key = 'Legacy:Every/Path=0042';
    const created = await create(A, importing, key);
    const licenseId = created.data.createLicense.license.id;
    await t.prisma.license.update({ where: { id: licenseId }, data: { floatingSeats: 2 } });

    expect((await t.activate({ licenseKey: key, deviceId: 'dev-1' })).status).toBe(200);
    const deactivated = await t.post('/api/v1/deactivate', { licenseKey: key, deviceId: 'dev-1' });
    expect(deactivated.json, deactivated.text).toMatchObject({ deactivated: true });

    const checkout = await t.post('/api/v1/float/checkout', { licenseKey: key, deviceId: 'float-1' });
    expect(checkout.json, checkout.text).toMatchObject({ isValid: true });
    const heartbeat = await t.post('/api/v1/float/heartbeat', { sessionToken: checkout.json.sessionToken });
    expect(heartbeat.json).toMatchObject({ isValid: true });
    expect((await t.post('/api/v1/float/checkin', { sessionToken: checkout.json.sessionToken })).json).toMatchObject({ checkedIn: true });

    const metered = await t.post('/api/v1/meter', { licenseKey: key, event: 'exports', quantity: 2 });
    expect(metered.json, metered.text).toMatchObject({ isValid: true, total: 2 });

    // A license file encrypted under the imported key opens with it (white space around it ignored), not with another case.
    const file = await t.post('/api/v1/license-file', { licenseKey: key, encrypt: true });
    expect(file.json, file.text).toMatchObject({ isValid: true, encrypted: true });
    expect(await openLicenseFile(file.json.licenseFile, { licenseKey: ` ${key}\n` })).toMatch(/^ey/);
    await expect(openLicenseFile(file.json.licenseFile, { licenseKey: key.toUpperCase() })).rejects.toThrow();

    // Air-gapped: the SDK's request names the imported key's hint and carries a MAC under the key, which the server checks.
    expect(keyHint(key)).toBe(created.data.createLicense.license.keyHint);
    const fields = { v: 1 as const, hint: keyHint(key), device: 'air-1', name: null, pub: 'O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik', challenge: 'c'.repeat(43), iat: Math.floor(t.clock.now().getTime() / 1000), product: null, version: null };
    const { request } = encodeRequest({ ...fields, mac: await requestMac(key, fields) });
    const OFFLINE = 'mutation($input: ActivateOfflineInput!) { activateOffline(input: $input) { activationId } }';
    const offline = await t.gql(OFFLINE, { input: { licenseId, request, licenseKey: key } }, { token: A.admin.token });
    expect(offline.errors, JSON.stringify(offline.errors)).toBeUndefined();
    const { request: forged } = encodeRequest({ ...fields, device: 'air-2', mac: await requestMac(key.toLowerCase(), { ...fields, device: 'air-2' }) });
    expect((await t.gql(OFFLINE, { input: { licenseId, request: forged, licenseKey: key } }, { token: A.admin.token })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect(t.logs.join('')).not.toContain(key);
  });

  it('a reissue gives a Keyforge key; the imported key then answers like an unknown one', async () => {
    const key = 'reissued-imported-key-1';
    const created = await create(A, importing, key);
    const reissued = await t.gqlData('mutation($id: ID!) { reissueLicenseKey(input: { id: $id }) { key license { keyHint } } }', { id: created.data.createLicense.license.id }, { token: A.admin.token });
    expect(isKeyforgeKey(reissued.reissueLicenseKey.key)).toBe(true);
    expect(reissued.reissueLicenseKey.key).toMatch(/^ACME-/);
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json).toMatchObject({ isValid: false, errorCode: 'LicenseNotFound' });
    expect((await t.post('/api/v1/validate', { licenseKey: reissued.reissueLicenseKey.key })).json.isValid).toBe(true);
    // The old key stays taken: it cannot be imported again.
    expect((await create(A, importing, key)).errors?.[0]).toMatchObject({ message: KEY_UNUSABLE });
  });

  it('refuses a query parameter named like a key on every route, whatever its value', async () => {
    for (const query of ['licenseKey=anything-at-all', 'license_key=x', 'License-Key=LEGACY-0001', 'serial_key=abc', 'productKey=abc', 'key=legacy-key-1234']) {
      for (const path of ['/api/v1/validate', '/api/graphql', '/healthz']) {
        const response = await t.post(`${path}?${query}`, { licenseKey: 'legacy-key-1234' });
        expect(response.status, `${path}?${query}`).toBe(400);
        expect(response.json.error.message).toMatch(/never in the URL/);
      }
    }
    // Other parameter names are left alone (an imported key has no shape to find by).
    expect((await t.post('/api/v1/validate?source=legacy', { licenseKey: 'no-such-key-1234' })).json).toMatchObject({ errorCode: 'LicenseNotFound' });
  });

  it('the CSV import takes imported keys for a product that accepts them, and reports bad ones by line without the key', async () => {
    const theirs = 'GLOBEX-ONLY-KEY-0001';
    const importingB = (await t.gqlData('mutation { createProduct(input: { name: "Legacy CSV B", allowImportedKeys: true }) { product { id } } }', {}, { token: B.admin.token })).createProduct.product.id;
    expect((await create(B, importingB, theirs)).errors).toBeUndefined();
    const csv = [
      'product,key,seats',
      'Legacy,=csv-kept-exactly+1,1',
      `Legacy,${theirs},1`,
      'Legacy,has white space,1',
      'Acme Studio,not-accepted-here-1,1',
      'Legacy,csv-dup-0000-1,1',
      'Legacy,csv-dup-0000-1,1',
    ].join('\n');
    const report = await checkLicenseImport(adminContext(t, A), csv);
    expect(report.errors).toEqual([
      { line: 3, column: 'key', message: 'cannot be used; leave it empty to generate a new key' },
      { line: 4, column: 'key', message: expect.stringContaining('is not a license key') },
      { line: 5, column: 'key', message: expect.stringContaining('does not accept imported keys') },
      { line: 7, column: 'key', message: 'is the same key as line 6' },
    ]);
    expect(JSON.stringify(report)).not.toContain(theirs);
    expect(report.valid).toBe(2);
  });
});
