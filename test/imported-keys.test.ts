import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalLicenseKey, IMPORTED_KEY_MAX_LENGTH, IMPORTED_KEY_MIN_LENGTH, isKeyforgeKey, licenseKeyHint } from '../server/src/crypto/license-key.js';
import { KEY_UNUSABLE } from '../server/src/services/licenses/management.js';
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
});
