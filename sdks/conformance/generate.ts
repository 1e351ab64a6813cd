// Generates sdks/conformance/vectors.json with the server's own code: its token signer and JWKS format
// (services/signing), its offline-token and license-file builders (services/licenses/validate.ts,
// services/license-files), its activation-request MAC and its deactivation-proof check. Keys, ids and the
// encryption's random bytes come from fixed seeds and the clock is fixed, so a rerun writes the same bytes.
// `pnpm sdk:vectors` writes the file; test/sdk-vectors.test.ts regenerates it in memory and compares.
import nodeCrypto, { createHash, createHmac, createPrivateKey, createPublicKey, sign as signBytes, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { LicensingContext, TokenSigner } from '../../server/src/services/context.js';
import { AppError } from '../../server/src/domain/errors.js';
import { licenseKeyHint } from '../../server/src/crypto/license-key.js';
import { armor, readArmor } from '../../server/src/services/license-files/armor.js';
import { signLicenseFile, type LicenseFileContext } from '../../server/src/services/license-files/license-file.js';
import { deactivateFromProof, parseActivationRequest, requestMac } from '../../server/src/services/license-files/offline-activation.js';
import type { LicenseRecord } from '../../server/src/services/licenses/license-record.js';
import { signOfflineToken } from '../../server/src/services/licenses/validate.js';
import { publishedKey, tokenSigner } from '../../server/src/services/signing/signing-keys.js';

export const VECTORS_PATH = fileURLToPath(new URL('./vectors.json', import.meta.url));

const ISSUER = 'https://licenses.example.test';
const PRODUCT = 'Acme Studio';
const OTHER_PRODUCT = 'Other App';
const TOLERANCE = 300;
const LICENSE_KEY = 'ACME-7KQ2-M9XH-4TRB-WZ3P';
const OTHER_LICENSE_KEY = 'ACME-9PQR-8STV-WXYZ-2345';
/** A key imported from another licensing service (a product's allowImportedKeys): kept exactly, case-sensitive. */
const IMPORTED_LICENSE_KEY = 'LEGACY-4f2a9c1e-Bd83-x7Q';
const DEVICE = 'conformance-device-1';
const OTHER_DEVICE = 'conformance-device-2';
/** 2026-06-01T12:00:00Z: every token and file is issued then. */
const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const DAY = 86_400;
const t0 = T0 / 1000;

const sha256 = (text: string) => createHash('sha256').update(text).digest();
const b64u = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64url');

/** The Ed25519 key of a fixed 32-byte seed (PKCS#8: the RFC 8410 prefix, then the seed). */
function seededKey(name: string) {
  const seed = sha256(`keyforge conformance key ${name}`);
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey);
  const x = publicKey.export({ format: 'jwk' }).x!;
  return { seed: b64u(seed), x, privateKey, publicKey };
}

/**
 * Runs `work` with node:crypto's randomBytes drawing from a seeded stream (SHA-256 in counter mode), so the
 * server's encryptLicenseFile draws the same salt and IV on every run. Restored afterwards.
 */
async function withSeededRandom<T>(work: () => Promise<T>): Promise<T> {
  const original = nodeCrypto.randomBytes;
  let counter = 0;
  const seeded = ((size: number) => {
    const chunks: Buffer[] = [];
    let length = 0;
    while (length < size) {
      const chunk = sha256(`keyforge conformance random ${counter++}`);
      chunks.push(chunk);
      length += chunk.length;
    }
    return Buffer.concat(chunks).subarray(0, size);
  }) as typeof nodeCrypto.randomBytes;
  nodeCrypto.randomBytes = seeded;
  syncBuiltinESMExports();
  try {
    return await work();
  } finally {
    nodeCrypto.randomBytes = original;
    syncBuiltinESMExports();
  }
}

const baseLicense: LicenseRecord = {
  id: '6b0f1d2e-3c4b-4a59-8e6f-7a8b9c0d1e2f',
  tenantId: '0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a',
  status: 'active',
  maxActivations: 3,
  currentActivations: 1,
  expiresAt: null,
  isTrial: false,
  nodeLocked: false,
  offlineGraceDays: 7,
  gracePeriodDays: null,
  features: ['export', 'render'],
  customFields: null,
  minVersion: null,
  maxVersion: null,
  maintenanceExpiresAt: null,
  customerEmail: null,
  productId: '4e5f6a7b-8c9d-4e0f-a1b2-c3d4e5f6a7b8',
  productName: PRODUCT,
  bundleProducts: null,
  subscriptionEndsAt: null,
};
const license = (changes: Partial<LicenseRecord> = {}): LicenseRecord => ({ ...baseLicense, ...changes });

type Expect = { valid: true; [key: string]: unknown } | { valid: false; error: string };

function splitJws(token: string) {
  const [header, payload, signature] = token.split('.');
  return { header, payload, signature, claims: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown> };
}

/** A compact JWS over arbitrary header and payload bytes (for malformed tokens the server would never sign). */
function rawJws(header: object, payload: string, key: KeyObject): string {
  const input = `${b64u(JSON.stringify(header))}.${b64u(payload)}`;
  return `${input}.${b64u(signBytes(null, Buffer.from(input), key))}`;
}

/** The token with its payload replaced by `edit(claims)`, the original signature kept. */
function editedPayload(token: string, edit: (claims: Record<string, unknown>) => Record<string, unknown>): string {
  const { header, signature, claims } = splitJws(token);
  return `${header}.${b64u(JSON.stringify(edit(claims)))}.${signature}`;
}

/** The token with one signature character changed (a different byte, still base64url). */
function editedSignature(token: string): string {
  const { header, payload, signature } = splitJws(token);
  const first = signature[0] === 'A' ? 'B' : 'A';
  return `${header}.${payload}.${first}${signature.slice(1)}`;
}

const fileEnvelope = (file: string) => JSON.parse(readArmor('LICENSE FILE', file, 'file').toString('utf8')) as Record<string, unknown>;
const armorFile = (envelope: object) => armor('LICENSE FILE', Buffer.from(JSON.stringify(envelope)));
const fileToken = (file: string) => fileEnvelope(file).token as string;

/** The server's verdict on a deactivation proof for this stored activation: its own check, with the activation looked up in memory. */
async function proofVerdict(proof: string, activation: { id: string; licenseId: string; deviceId: string; devicePublicKey: string }): Promise<Expect> {
  const stored = { ...activation, tenantId: baseLicense.tenantId, deviceName: null, deactivatedAt: new Date(T0), license: { keyHint: 'ACME-…-WZ3P', maxActivations: 3, currentActivations: 0 } };
  const db = {
    prisma: {
      activation: {
        findFirst: async ({ where }: { where: { id: string; tenantId: string; licenseId: string } }) =>
          where.id === stored.id && where.tenantId === stored.tenantId && where.licenseId === stored.licenseId ? stored : null,
      },
    },
  };
  const ctx = { db, now: new Date(T0), signer: null, issuer: ISSUER } as unknown as LicenseFileContext;
  try {
    await deactivateFromProof(ctx, { tenantId: baseLicense.tenantId, proofText: proof, actor: { kind: 'system' } as never });
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    // Every stateless check passed: the stored activation is marked freed, so the proof would free it now.
    if (error.code === 'Conflict' && /freed already/.test(error.message)) return { valid: true };
    return { valid: false, error: error.code };
  }
  throw new Error('deactivateFromProof reached the database: the in-memory activation must be marked freed.');
}

export async function generateVectors(): Promise<Record<string, unknown>> {
  return withSeededRandom(build);
}

async function build(): Promise<Record<string, unknown>> {
  const keys = { old: seededKey('old'), new: seededKey('new'), rogue: seededKey('rogue'), device: seededKey('device'), otherDevice: seededKey('other device') };
  const published = {
    old: await publishedKey(keys.old.publicKey),
    new: await publishedKey(keys.new.publicKey),
    rogue: await publishedKey(keys.rogue.publicKey),
  };
  const jwks = {
    old: { keys: [published.old.publicJwk] },
    rotated: { keys: [published.new.publicJwk, published.old.publicJwk] },
    newOnly: { keys: [published.new.publicJwk] },
    hostile: {
      keys: [
        { kty: 'RSA', kid: published.old.kid, n: published.old.publicJwk.x, e: 'AQAB', alg: 'RS256', use: 'sig' },
        { kty: 'OKP', crv: 'X25519', kid: published.old.kid, x: published.old.publicJwk.x, use: 'sig' },
        { kty: 'OKP', crv: 'Ed25519', kid: published.old.kid, x: published.old.publicJwk.x, alg: 'ES256', use: 'sig' },
        { kty: 'OKP', crv: 'Ed25519', kid: published.old.kid, alg: 'EdDSA', use: 'sig' },
        // One usable key, so a client accepts the set (a JWKS with none is refused as configuration).
        published.new.publicJwk,
      ],
    },
  };
  const signers = {
    old: tokenSigner(keys.old.privateKey, published.old.kid, ISSUER),
    new: tokenSigner(keys.new.privateKey, published.new.kid, ISSUER),
    rogue: tokenSigner(keys.rogue.privateKey, published.rogue.kid, ISSUER),
    forged: tokenSigner(keys.rogue.privateKey, published.new.kid, ISSUER),
    otherIssuer: tokenSigner(keys.new.privateKey, published.new.kid, 'https://licenses.attacker.test'),
  };

  const online = (signer: TokenSigner, record: LicenseRecord, input: { deviceId?: string; requireActivation?: boolean; nonce?: string } = {}) =>
    signOfflineToken({ now: new Date(T0), signer } as unknown as LicensingContext, record, input);
  const file = (signer: TokenSigner, record: LicenseRecord, options: Parameters<typeof signLicenseFile>[2] & { ttlDays: number }) =>
    signLicenseFile({ now: new Date(T0), signer, issuer: ISSUER } as unknown as LicenseFileContext, record, options).then((issued) => issued.licenseFile);
  const valid = (token: string): Expect => ({ valid: true, claims: splitJws(token).claims });
  const refused = (error: string): Expect => ({ valid: false, error });

  // ---- Offline tokens -------------------------------------------------------------------------------------
  const token = await online(signers.new, license());
  const tokenByOld = await online(signers.old, license());
  const bound = await online(signers.new, license(), { deviceId: DEVICE });
  const attested = await online(signers.new, license(), { deviceId: DEVICE, requireActivation: true });
  const challenge = 'Zm9yIGNvbmZvcm1hbmNlIHRlc3RzIG9ubHk';
  const echoed = await online(signers.new, license(), { nonce: challenge });
  const noGrace = await online(signers.new, license({ offlineGraceDays: null }));
  const zeroGrace = await online(signers.new, license({ offlineGraceDays: 0 }));
  const capped = await online(signers.new, license({ expiresAt: new Date(T0 + 2 * DAY * 1000) }));
  const bundleToken = await online(signers.new, license({ productName: 'Acme Suite', bundleProducts: [PRODUCT, 'Acme Viewer'] }));
  const otherProductToken = await online(signers.new, license({ productName: OTHER_PRODUCT }));
  const exp = splitJws(token).claims.exp as number;
  const newHeader = { alg: 'EdDSA', kid: published.new.kid, typ: 'JWT' };
  const claimsJson = Buffer.from(splitJws(token).payload, 'base64url').toString('utf8');
  const { product: _product, ...withoutProduct } = splitJws(token).claims;

  type TokenVector = { name: string; description: string; token: string; jwks: keyof typeof jwks; now: number; products?: string[]; deviceId?: string; requireActivation?: boolean; challenge?: string; offline: boolean; expect: Expect };
  const tokenVector = (vector: Omit<TokenVector, 'now' | 'offline' | 'jwks'> & Partial<Pick<TokenVector, 'now' | 'offline' | 'jwks'>>): TokenVector => ({
    name: vector.name,
    description: vector.description,
    token: vector.token,
    jwks: vector.jwks ?? 'rotated',
    now: vector.now ?? t0 + 60,
    ...(vector.products ? { products: vector.products } : {}),
    ...(vector.deviceId !== undefined ? { deviceId: vector.deviceId } : {}),
    ...(vector.requireActivation ? { requireActivation: true } : {}),
    ...(vector.challenge !== undefined ? { challenge: vector.challenge } : {}),
    offline: vector.offline ?? false,
    expect: vector.expect,
  });
  const offlineTokens: TokenVector[] = [
    tokenVector({ name: 'valid-new-key', description: 'Signed by the current key, checked with the JWKS after the rotation.', token, expect: valid(token) }),
    tokenVector({ name: 'valid-old-key-after-rotation', description: 'Signed by the old key before the rotation: the rotated JWKS still lists it.', token: tokenByOld, expect: valid(tokenByOld) }),
    tokenVector({ name: 'valid-old-key-before-rotation', description: 'Signed by the old key, checked with the JWKS of before the rotation.', token: tokenByOld, jwks: 'old', expect: valid(tokenByOld) }),
    tokenVector({ name: 'new-key-not-in-old-jwks', description: 'Signed by the new key, checked with a JWKS from before the rotation (a pinned copy not updated).', token, jwks: 'old', expect: refused('KeyUnknown') }),
    tokenVector({ name: 'old-key-retired', description: 'Signed by the old key, checked with a JWKS that no longer lists it.', token: tokenByOld, jwks: 'newOnly', expect: refused('KeyUnknown') }),
    tokenVector({ name: 'unknown-kid', description: 'Signed by a key the server never published, under its own kid.', token: await online(signers.rogue, license()), expect: refused('KeyUnknown') }),
    tokenVector({ name: 'forged-with-known-kid', description: 'Signed by a foreign key under the kid of the current key.', token: await online(signers.forged, license()), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'hostile-jwks', description: 'The JWKS lists the kid only with wrong key types, algorithms or no x: unusable entries are dropped.', token: tokenByOld, jwks: 'hostile', expect: refused('KeyUnknown') }),
    tokenVector({ name: 'edited-payload', description: 'A feature added to the payload, the signature kept.', token: editedPayload(token, (claims) => ({ ...claims, features: ['export', 'render', 'enterprise'] })), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'edited-expiry', description: 'exp moved a year on, the signature kept.', token: editedPayload(token, (claims) => ({ ...claims, exp: exp + 365 * DAY })), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'edited-signature', description: 'One character of the signature changed.', token: editedSignature(token), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'truncated-signature', description: 'The signature cut short.', token: token.slice(0, -10), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'alg-none', description: 'alg "none" with the current kid and no signature.', token: `${b64u(JSON.stringify({ alg: 'none', kid: published.new.kid, typ: 'JWT' }))}.${splitJws(token).payload}.`, expect: refused('TokenInvalid') }),
    tokenVector({
      name: 'alg-hs256-with-public-key',
      description: 'alg HS256, HMAC keyed with the public key: the algorithm-confusion attack.',
      token: (() => {
        const input = `${b64u(JSON.stringify({ alg: 'HS256', kid: published.new.kid, typ: 'JWT' }))}.${splitJws(token).payload}`;
        return `${input}.${createHmac('sha256', Buffer.from(keys.new.x, 'base64url')).update(input).digest('base64url')}`;
      })(),
      expect: refused('TokenInvalid'),
    }),
    tokenVector({ name: 'no-kid', description: 'Correctly signed by the current key, but the header names no kid.', token: rawJws({ alg: 'EdDSA', typ: 'JWT' }, claimsJson, keys.new.privateKey), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'not-a-jwt', description: 'Not three base64url parts.', token: 'not-a-token', expect: refused('TokenInvalid') }),
    tokenVector({ name: 'payload-not-json', description: 'Correctly signed, but the payload is not JSON.', token: rawJws(newHeader, 'not json', keys.new.privateKey), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'missing-product-claim', description: 'Correctly signed by the current key, without the product claim.', token: rawJws(newHeader, JSON.stringify(withoutProduct), keys.new.privateKey), expect: refused('TokenInvalid') }),
    tokenVector({ name: 'wrong-issuer', description: 'Signed by the current key for another issuer.', token: await online(signers.otherIssuer, license()), expect: refused('WrongIssuer') }),
    tokenVector({ name: 'other-product', description: 'A license of another product.', token: otherProductToken, expect: refused('WrongProduct') }),
    tokenVector({ name: 'bundle-containing-product', description: 'A bundle license whose member products include the client\'s product.', token: bundleToken, expect: valid(bundleToken) }),
    tokenVector({ name: 'client-with-several-products', description: 'The client names two products; the token is for the second.', token: otherProductToken, products: [PRODUCT, OTHER_PRODUCT], expect: valid(otherProductToken) }),
    tokenVector({ name: 'device-bound', description: 'Bound to the device the check asks for.', token: bound, deviceId: DEVICE, expect: valid(bound) }),
    tokenVector({ name: 'device-bound-other-device', description: 'Bound to another device than the one asked for.', token: bound, deviceId: OTHER_DEVICE, expect: refused('WrongDevice') }),
    tokenVector({ name: 'device-unbound-but-asked', description: 'Bound to no device while the check asks for one.', token, deviceId: DEVICE, expect: refused('WrongDevice') }),
    tokenVector({ name: 'require-activation-attested', description: 'A device-scoped validate attested the activation.', token: attested, deviceId: DEVICE, requireActivation: true, expect: valid(attested) }),
    tokenVector({ name: 'require-activation-not-attested', description: 'Bound to the device, but without deviceActivated.', token: bound, deviceId: DEVICE, requireActivation: true, expect: refused('WrongDevice') }),
    tokenVector({ name: 'challenge-echoed', description: 'The online answer echoes this request\'s challenge.', token: echoed, challenge, expect: valid(echoed) }),
    tokenVector({ name: 'challenge-other', description: 'A replayed answer: it echoes another challenge.', token: echoed, challenge: 'b3RoZXIgY2hhbGxlbmdlIG9mIGFub3RoZXIgcmVx', expect: refused('ChallengeMismatch') }),
    tokenVector({ name: 'challenge-absent', description: 'The answer echoes no challenge at all.', token, challenge, expect: refused('ChallengeMismatch') }),
    tokenVector({ name: 'offline-in-grace', description: 'Offline, six days into a seven-day grace period.', token, offline: true, now: t0 + 6 * DAY, expect: valid(token) }),
    tokenVector({ name: 'offline-within-clock-tolerance', description: 'Four minutes past exp: within the five-minute clock tolerance.', token, offline: true, now: exp + 240, expect: valid(token) }),
    tokenVector({ name: 'offline-at-tolerance-boundary', description: 'Exactly the tolerance past exp: expired.', token, offline: true, now: exp + TOLERANCE, expect: refused('TokenExpired') }),
    tokenVector({ name: 'offline-grace-over', description: 'Offline past the grace period and the tolerance.', token, offline: true, now: exp + 3600, expect: refused('TokenExpired') }),
    tokenVector({ name: 'online-check-expired', description: 'The online check enforces exp too.', token, now: exp + 3600, expect: refused('TokenExpired') }),
    tokenVector({ name: 'expiry-capped-by-license', description: 'A seven-day grace on a license that expires in two days: the token expires with the license.', token: capped, offline: true, now: t0 + 3 * DAY, expect: refused('TokenExpired') }),
    tokenVector({ name: 'capped-token-before-license-expiry', description: 'The same token a day in.', token: capped, offline: true, now: t0 + DAY, expect: valid(capped) }),
    tokenVector({ name: 'offline-not-allowed', description: 'Offline use of a license without an offline grace period.', token: noGrace, offline: true, expect: refused('OfflineNotAllowed') }),
    tokenVector({ name: 'offline-zero-grace', description: 'offlineGraceDays 0 is no offline use either.', token: zeroGrace, offline: true, expect: refused('OfflineNotAllowed') }),
    tokenVector({ name: 'no-grace-online-check', description: 'The online check accepts a token without offline grace (for its hour of life).', token: noGrace, expect: valid(noGrace) }),
    tokenVector({ name: 'offline-clock-rollback', description: 'Offline, the clock before the token\'s issue time minus the tolerance: set back.', token, offline: true, now: t0 - 400, expect: refused('ClockRollback') }),
    tokenVector({ name: 'offline-clock-slightly-behind', description: 'Offline, the clock two minutes before iat: within the tolerance.', token, offline: true, now: t0 - 120, expect: valid(token) }),
  ];

  // ---- License files ----------------------------------------------------------------------------------------
  const ttl = { ttlDays: 30 };
  const plain = await file(signers.new, license(), ttl);
  const deviceFile = await file(signers.new, license(), { ...ttl, deviceId: DEVICE, deviceActivated: true });
  const deviceFileUnattested = await file(signers.new, license(), { ...ttl, deviceId: DEVICE });
  const encrypted = await file(signers.new, license(), { ...ttl, licenseKey: LICENSE_KEY });
  const encryptedDevice = await file(signers.new, license(), { ...ttl, deviceId: DEVICE, deviceActivated: true, licenseKey: LICENSE_KEY });
  const encryptedImported = await file(signers.new, license(), { ...ttl, licenseKey: IMPORTED_LICENSE_KEY });
  const shortFile = await file(signers.new, license(), { ttlDays: 1 });
  const cappedFile = await file(signers.new, license({ expiresAt: new Date(T0 + 2 * DAY * 1000) }), ttl);
  const oldKeyFile = await file(signers.old, license(), ttl);
  const fileValid = (text: string, options: { licenseKey?: string; deviceId?: string } = {}): Expect => {
    if (!options.licenseKey) return valid(fileToken(text));
    return { valid: true, claims: splitJws(tokenOfEncrypted(text, options.licenseKey, options.deviceId)).claims };
  };
  const encryptedEnvelope = fileEnvelope(encrypted);
  const ct = Buffer.from(encryptedEnvelope.ct as string, 'base64url');
  ct[5] ^= 0x01;
  const plainFileLines = plain.trimEnd().split('\n');

  type FileVector = { name: string; description: string; file: string; jwks: keyof typeof jwks; now: number; licenseKey?: string; deviceId?: string; requireActivation?: boolean; expect: Expect };
  const fileVector = (vector: Omit<FileVector, 'now' | 'jwks'> & Partial<Pick<FileVector, 'now' | 'jwks'>>): FileVector => ({
    name: vector.name,
    description: vector.description,
    file: vector.file,
    jwks: vector.jwks ?? 'rotated',
    now: vector.now ?? t0 + 60,
    ...(vector.licenseKey !== undefined ? { licenseKey: vector.licenseKey } : {}),
    ...(vector.deviceId !== undefined ? { deviceId: vector.deviceId } : {}),
    ...(vector.requireActivation ? { requireActivation: true } : {}),
    expect: vector.expect,
  });
  const licenseFiles: FileVector[] = [
    fileVector({ name: 'plain', description: 'A license file for the whole license, unencrypted.', file: plain, expect: fileValid(plain) }),
    fileVector({ name: 'plain-asked-for-device', description: 'A file bound to no device while the check asks for one.', file: plain, deviceId: DEVICE, expect: refused('WrongDevice') }),
    fileVector({ name: 'device-file', description: 'A device file, checked on its device.', file: deviceFile, deviceId: DEVICE, expect: fileValid(deviceFile) }),
    fileVector({ name: 'device-file-require-activation', description: 'A device file attesting the activation, with requireActivation.', file: deviceFile, deviceId: DEVICE, requireActivation: true, expect: fileValid(deviceFile) }),
    fileVector({ name: 'device-file-other-device', description: 'A device file checked on another device.', file: deviceFile, deviceId: OTHER_DEVICE, expect: refused('WrongDevice') }),
    fileVector({ name: 'device-file-not-attested', description: 'A device file without deviceActivated, with requireActivation.', file: deviceFileUnattested, deviceId: DEVICE, requireActivation: true, expect: refused('WrongDevice') }),
    fileVector({ name: 'encrypted', description: 'Encrypted with the license key.', file: encrypted, licenseKey: LICENSE_KEY, expect: fileValid(encrypted, { licenseKey: LICENSE_KEY }) }),
    fileVector({ name: 'encrypted-key-as-typed', description: 'The key typed in lower case with spaces: normalised before the HKDF.', file: encrypted, licenseKey: ' acme-7kq2 -m9xh-4trb-wz3p\n', expect: fileValid(encrypted, { licenseKey: LICENSE_KEY }) }),
    fileVector({ name: 'encrypted-wrong-key', description: 'Encrypted with another license key.', file: encrypted, licenseKey: OTHER_LICENSE_KEY, expect: refused('TokenInvalid') }),
    fileVector({ name: 'encrypted-imported-key', description: 'Encrypted with a key imported in another format, typed with white space around it: trimmed, case kept, before the HKDF.', file: encryptedImported, licenseKey: ` ${IMPORTED_LICENSE_KEY}\n`, expect: fileValid(encryptedImported, { licenseKey: IMPORTED_LICENSE_KEY }) }),
    fileVector({ name: 'encrypted-imported-key-other-case', description: 'An imported key in another case is another key.', file: encryptedImported, licenseKey: IMPORTED_LICENSE_KEY.toUpperCase(), expect: refused('TokenInvalid') }),
    fileVector({ name: 'encrypted-no-key', description: 'Encrypted, and no key given.', file: encrypted, expect: refused('TokenInvalid') }),
    fileVector({ name: 'encrypted-edited-ciphertext', description: 'One bit of the ciphertext flipped: the GCM tag fails.', file: armorFile({ ...encryptedEnvelope, ct: ct.toString('base64url') }), licenseKey: LICENSE_KEY, expect: refused('TokenInvalid') }),
    fileVector({ name: 'encrypted-device', description: 'Encrypted for one device, opened on it.', file: encryptedDevice, licenseKey: LICENSE_KEY, deviceId: DEVICE, expect: fileValid(encryptedDevice, { licenseKey: LICENSE_KEY, deviceId: DEVICE }) }),
    fileVector({ name: 'encrypted-device-other-device', description: 'Encrypted for one device, opened on another: the key does not derive.', file: encryptedDevice, licenseKey: LICENSE_KEY, deviceId: OTHER_DEVICE, expect: refused('TokenInvalid') }),
    fileVector({ name: 'encrypted-device-no-device', description: 'Encrypted for one device, and no device given.', file: encryptedDevice, licenseKey: LICENSE_KEY, expect: refused('WrongDevice') }),
    fileVector({ name: 'edited-claim', description: 'A feature added to the signed token inside, re-armored.', file: armorFile({ v: 1, enc: null, token: editedPayload(fileToken(plain), (claims) => ({ ...claims, features: ['export', 'render', 'enterprise'] })) }), expect: refused('TokenInvalid') }),
    fileVector({ name: 'online-token-in-envelope', description: 'An online offline token (no kind: "license-file") put in a file envelope.', file: armorFile({ v: 1, enc: null, token }), expect: refused('TokenInvalid') }),
    fileVector({ name: 'expired', description: 'A one-day file, checked two days on.', file: shortFile, now: t0 + 2 * DAY, expect: refused('TokenExpired') }),
    fileVector({ name: 'ttl-capped-by-license', description: 'A 30-day file of a license that expires in two days expires with it.', file: cappedFile, now: t0 + 3 * DAY, expect: refused('TokenExpired') }),
    fileVector({ name: 'ttl-capped-before-expiry', description: 'The same file a day in (its ttl claim is two days).', file: cappedFile, now: t0 + DAY, expect: fileValid(cappedFile) }),
    fileVector({ name: 'clock-rollback', description: 'Checked with a clock before the file\'s issue time minus the tolerance.', file: plain, now: t0 - 400, expect: refused('ClockRollback') }),
    fileVector({ name: 'old-key-after-rotation', description: 'Signed by the old key, checked with the rotated JWKS.', file: oldKeyFile, expect: fileValid(oldKeyFile) }),
    fileVector({ name: 'old-key-retired', description: 'Signed by the old key, checked with a JWKS that no longer lists it.', file: oldKeyFile, jwks: 'newOnly', expect: refused('KeyUnknown') }),
    fileVector({ name: 'unknown-key', description: 'Signed by a key the server never published.', file: await file(signers.rogue, license(), ttl), expect: refused('KeyUnknown') }),
    fileVector({ name: 'other-product', description: 'A file of another product\'s license.', file: await file(signers.new, license({ productName: OTHER_PRODUCT }), ttl), expect: refused('WrongProduct') }),
    fileVector({ name: 'mail-quoted', description: 'Quoted in a mail reply: "> " before each line, CRLF line ends, text around it.', file: `Here is the file:\r\n\r\n${plainFileLines.map((line) => `> ${line}`).join('\r\n')}\r\n\r\nRegards\r\n`, expect: fileValid(plain) }),
    fileVector({ name: 'end-line-missing', description: 'The END line cut off.', file: plainFileLines.slice(0, -1).join('\n'), expect: refused('TokenInvalid') }),
    fileVector({ name: 'body-not-base64', description: 'A character outside base64 in the body.', file: plain.replace(plainFileLines[1], `${plainFileLines[1].slice(0, 10)}*${plainFileLines[1].slice(11)}`), expect: refused('TokenInvalid') }),
    fileVector({ name: 'unknown-version', description: 'An envelope of version 2.', file: armorFile({ v: 2, enc: null, token: fileToken(plain) }), expect: refused('TokenInvalid') }),
    fileVector({ name: 'oversized', description: 'Over 16,384 characters: refused before it is read.', file: plain + '\n'.padEnd(16_400, ' '), expect: refused('TokenInvalid') }),
  ];

  // ---- Activation requests ----------------------------------------------------------------------------------
  type Fields = { v: 1; hint: string; device: string; name: string | null; pub: string; challenge: string; iat: number; product: string[] | null; version: string | null };
  const requestFields = (changes: Partial<Fields> = {}): Fields => ({
    v: 1,
    hint: 'ACME-…-WZ3P',
    device: DEVICE,
    name: 'Line 4 controller',
    pub: keys.device.x,
    challenge: b64u(sha256('keyforge conformance challenge 1')),
    iat: t0,
    product: [PRODUCT],
    version: '2.4.1',
    ...changes,
  });
  const requestVector = async (name: string, description: string, fields: Fields, macKey: string, options: { deviceKey?: string; edit?: Partial<Fields>; licenseKey?: string } = {}) => {
    const licenseKey = options.licenseKey ?? LICENSE_KEY;
    const mac = requestMac(macKey, fields);
    const written = { ...fields, ...options.edit, mac };
    const json = JSON.stringify(written);
    const request = armor('ACTIVATION REQUEST', Buffer.from(json));
    const compact = `KFREQ1:${b64u(json)}`;
    let expect: Expect;
    try {
      const parsed = parseActivationRequest(request);
      const parsedCompact = parseActivationRequest(compact);
      if (JSON.stringify(parsed) !== JSON.stringify(parsedCompact)) throw new Error(`${name}: the armored and compact forms read differently`);
      expect = requestMac(licenseKey, parsed) === parsed.mac ? { valid: true } : refused('InvalidRequest');
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      expect = refused(error.code);
    }
    const { mac: _mac, ...writtenFields } = written;
    return { name, description, licenseKey, deviceKey: options.deviceKey ?? 'device', fields: writtenFields, mac, request, compact, expect };
  };
  const activationRequests = [
    await requestVector('genuine', 'Written with the license key, as the SDK writes it.', requestFields(), LICENSE_KEY),
    await requestVector('genuine-nulls', 'No device name, product or version.', requestFields({ name: null, product: null, version: null }), LICENSE_KEY),
    await requestVector('genuine-several-products', 'A client naming two products.', requestFields({ product: [PRODUCT, OTHER_PRODUCT] }), LICENSE_KEY),
    await requestVector('genuine-unicode-name', 'A name with non-ASCII characters: serialised as UTF-8, never as \\u escapes.', requestFields({ name: 'Ada’s laptop — Zürich 🚀' }), LICENSE_KEY),
    await requestVector('genuine-escaped-name', 'A name with characters JSON escapes (quote, backslash, newline, tab, U+0001) and ones it does not (<, >, &, /).', requestFields({ name: 'a "quoted" \\ back\nslash\tand \u0001 <b>&</b> a/b' }), LICENSE_KEY),
    await requestVector('genuine-other-device-key', 'Another device key and challenge.', requestFields({ device: OTHER_DEVICE, pub: keys.otherDevice.x, challenge: b64u(sha256('keyforge conformance challenge 2')) }), LICENSE_KEY, { deviceKey: 'otherDevice' }),
    await requestVector('edited-device', 'The device id changed after the MAC was computed.', requestFields(), LICENSE_KEY, { edit: { device: OTHER_DEVICE } }),
    await requestVector('edited-product', 'The product list changed after the MAC was computed.', requestFields(), LICENSE_KEY, { edit: { product: [OTHER_PRODUCT] } }),
    await requestVector('other-license-key', 'Written with another license key (of the same hint).', requestFields(), OTHER_LICENSE_KEY),
    await requestVector('genuine-imported-key', 'Written with a key imported in another format: its hint is its first and last 4 characters, the MAC under the key as is (case kept).', requestFields({ hint: licenseKeyHint(IMPORTED_LICENSE_KEY) }), IMPORTED_LICENSE_KEY, { licenseKey: IMPORTED_LICENSE_KEY }),
  ];

  // ---- Activation responses ---------------------------------------------------------------------------------
  const activationId = '3f2e1d0c-9b8a-4765-8432-10fedcba9876';
  const pending = { deviceId: DEVICE, challenge: requestFields().challenge, pub: keys.device.x };
  const binding = { deviceId: DEVICE, deviceActivated: true, challenge: pending.challenge, devicePublicKey: pending.pub, activationId, ttlDays: 30 };
  const response = await file(signers.new, license(), binding);
  const encryptedResponse = await file(signers.new, license(), { ...binding, licenseKey: LICENSE_KEY });
  const responseVector = (name: string, description: string, text: string, expect: Expect, options: { pending?: typeof pending; licenseKey?: string; now?: number } = {}) => ({
    name,
    description,
    response: text,
    jwks: 'rotated',
    now: options.now ?? t0 + 60,
    pending: options.pending ?? pending,
    ...(options.licenseKey ? { licenseKey: options.licenseKey } : {}),
    expect,
  });
  const activationResponses = [
    responseVector('genuine', 'The server\'s answer to the request the installation wrote.', response, fileValid(response)),
    responseVector('genuine-encrypted', 'The same, encrypted for the device with the license key.', encryptedResponse, fileValid(encryptedResponse, { licenseKey: LICENSE_KEY, deviceId: DEVICE }), { licenseKey: LICENSE_KEY }),
    responseVector('other-challenge', 'The answer to another request (or one applied already): the installation\'s pending challenge differs.', response, refused('ChallengeMismatch'), { pending: { ...pending, challenge: b64u(sha256('keyforge conformance challenge 3')) } }),
    responseVector('other-device-key', 'Echoes the challenge but binds another device key.', await file(signers.new, license(), { ...binding, devicePublicKey: keys.otherDevice.x }), refused('WrongDevice')),
    responseVector('other-device', 'Echoes the challenge but is bound to another device id.', await file(signers.new, license(), { ...binding, deviceId: OTHER_DEVICE }), refused('WrongDevice')),
    responseVector('not-attested', 'Bound to the device but without deviceActivated.', await file(signers.new, license(), { ...binding, deviceActivated: false }), refused('WrongDevice')),
    responseVector('edited', 'A feature added to the signed token, re-armored.', armorFile({ v: 1, enc: null, token: editedPayload(fileToken(response), (claims) => ({ ...claims, features: ['export', 'render', 'enterprise'] })) }), refused('TokenInvalid')),
    responseVector('plain-license-file', 'A license file that answers no request (no nonce).', deviceFile, refused('ChallengeMismatch')),
    responseVector('expired', 'Applied after the file expired.', response, refused('TokenExpired'), { now: t0 + 31 * DAY }),
    responseVector('unknown-key', 'Signed by a key the server never published.', await file(signers.rogue, license(), binding), refused('KeyUnknown')),
  ];

  // ---- Deactivation proofs ----------------------------------------------------------------------------------
  const stored = { id: activationId, licenseId: baseLicense.id, deviceId: DEVICE, devicePublicKey: keys.device.x };
  const proofClaims = (changes: Record<string, unknown> = {}) => ({ kind: 'keyforge-deactivation', activation: activationId, license: baseLicense.id, device: DEVICE, iat: t0 + DAY, jti: b64u(sha256('keyforge conformance jti').subarray(0, 16)), ...changes });
  const proofOf = (jws: string) => armor('DEACTIVATION PROOF', Buffer.from(jws));
  const proofVector = async (name: string, description: string, claims: Record<string, unknown>, jws: string, deviceKey = 'device') => ({
    name,
    description,
    deviceKey,
    claims,
    proof: proofOf(jws),
    activation: stored,
    expect: await proofVerdict(proofOf(jws), stored),
  });
  const genuineJws = rawJws({ alg: 'EdDSA' }, JSON.stringify(proofClaims()), keys.device.privateKey);
  const deactivationProofs = [
    await proofVector('genuine', 'Signed by the device key of the activation it names.', proofClaims(), genuineJws),
    await proofVector('genuine-later', 'Another jti and time: still the device\'s own proof.', proofClaims({ iat: t0 + 2 * DAY, jti: b64u(sha256('keyforge conformance jti 2').subarray(0, 16)) }), rawJws({ alg: 'EdDSA' }, JSON.stringify(proofClaims({ iat: t0 + 2 * DAY, jti: b64u(sha256('keyforge conformance jti 2').subarray(0, 16)) })), keys.device.privateKey)),
    await proofVector('edited-payload', 'The device id changed, the signature kept.', proofClaims({ device: OTHER_DEVICE }), `${genuineJws.split('.')[0]}.${b64u(JSON.stringify(proofClaims({ device: OTHER_DEVICE })))}.${genuineJws.split('.')[2]}`),
    await proofVector('other-device-key', 'Signed by another device\'s key.', proofClaims(), rawJws({ alg: 'EdDSA' }, JSON.stringify(proofClaims()), keys.otherDevice.privateKey), 'otherDevice'),
    await proofVector('alg-none', 'alg "none" and no signature.', proofClaims(), `${b64u(JSON.stringify({ alg: 'none' }))}.${b64u(JSON.stringify(proofClaims()))}.`),
    await proofVector('wrong-kind', 'Signed by the device, but not a deactivation proof.', proofClaims({ kind: 'something-else' }), rawJws({ alg: 'EdDSA' }, JSON.stringify(proofClaims({ kind: 'something-else' })), keys.device.privateKey)),
    await proofVector('other-activation', 'Names an activation the server does not have.', proofClaims({ activation: '00000000-0000-4000-8000-000000000000' }), rawJws({ alg: 'EdDSA' }, JSON.stringify(proofClaims({ activation: '00000000-0000-4000-8000-000000000000' })), keys.device.privateKey)),
  ];

  // ---- Artifact signatures ----------------------------------------------------------------------------------
  // A release artifact's signature, signed by the server's token signer (the keys of the JWKS; the statement of
  // services/releases), and the file it covers. The SDK verifies the signature as an offline token's (kid, EdDSA, issuer), then typ, product, the
  // artifact's id, and the bytes' size, SHA-256 and SHA-512. Every refusal is ArtifactIntegrity.
  const artifactFile = Buffer.from('Acme Studio 2.5.0 for Linux x64\n'.repeat(64));
  const otherFile = Buffer.from(artifactFile);
  otherFile[10] ^= 0x01;
  const hexOf = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest('hex');
  const artifactId = '7c6b5a49-3827-4615-9f4e-3d2c1b0a9f8e';
  const artifactFacts = {
    typ: 'keyforge.artifact',
    iss: ISSUER,
    product: baseLicense.productId,
    productName: PRODUCT,
    release: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    version: '2.5.0',
    artifact: artifactId,
    filename: 'acme-studio-2.5.0-linux-x64.tar.gz',
    platform: 'linux',
    arch: 'x64',
    size: artifactFile.length,
    sha256: hexOf('sha256', artifactFile),
    sha512: hexOf('sha512', artifactFile),
  };
  // The statement exactly as the server signs it (TokenSigner.signPayload: nothing added, no expiry).
  const signArtifact = (signer: TokenSigner, changes: Record<string, unknown> = {}) => signer.signPayload({ ...artifactFacts, iat: t0, ...changes });
  const listing = (signature: string, changes: Record<string, unknown> = {}) => ({
    id: artifactId,
    filename: artifactFacts.filename,
    platform: artifactFacts.platform,
    arch: artifactFacts.arch,
    filetype: 'tar.gz',
    size: artifactFacts.size,
    sha256: artifactFacts.sha256,
    sha512: artifactFacts.sha512,
    signature,
    ...changes,
  });
  const artifactSignature = await signArtifact(signers.new);
  type ArtifactVector = { name: string; description: string; jwks: keyof typeof jwks; artifact: ReturnType<typeof listing>; file: string; expect: Expect };
  const artifactVector = (name: string, description: string, artifact: ReturnType<typeof listing>, expect: Expect, options: { bytes?: Buffer; jwks?: keyof typeof jwks } = {}): ArtifactVector => ({
    name,
    description,
    jwks: options.jwks ?? 'rotated',
    artifact,
    file: b64u(options.bytes ?? artifactFile),
    expect,
  });
  const tamperedSha = hexOf('sha256', otherFile);
  const artifactSignatures: ArtifactVector[] = [
    artifactVector('valid', 'Signed by the current key; the file is the one signed.', listing(artifactSignature), valid(artifactSignature)),
    artifactVector('valid-old-key-after-rotation', 'Signed by the old key, checked with the rotated JWKS.', listing(await signArtifact(signers.old)), valid(await signArtifact(signers.old))),
    artifactVector('tampered-payload', 'The signed digests replaced by those of another file (and that file served), the signature kept.', listing(editedPayload(artifactSignature, (claims) => ({ ...claims, sha256: tamperedSha, sha512: hexOf('sha512', otherFile) })), { sha256: tamperedSha, sha512: hexOf('sha512', otherFile) }), refused('ArtifactIntegrity'), { bytes: otherFile }),
    artifactVector('tampered-signature', 'One character of the signature changed.', listing(editedSignature(artifactSignature)), refused('ArtifactIntegrity')),
    artifactVector('wrong-product', 'A genuine signature of another product\'s artifact.', listing(await signArtifact(signers.new, { product: '00000000-0000-4000-8000-0000000000aa', productName: OTHER_PRODUCT })), refused('ArtifactIntegrity')),
    artifactVector('wrong-kid', 'Signed by a key the server never published, under its own kid.', listing(await signArtifact(signers.rogue)), refused('ArtifactIntegrity')),
    artifactVector('forged-with-known-kid', 'Signed by a foreign key under the kid of the current key.', listing(await signArtifact(signers.forged)), refused('ArtifactIntegrity')),
    artifactVector('old-key-retired', 'Signed by the old key, checked with a JWKS that no longer lists it.', listing(await signArtifact(signers.old)), refused('ArtifactIntegrity'), { jwks: 'newOnly' }),
    artifactVector('wrong-issuer', 'Signed by the current key for another issuer.', listing(await signArtifact(signers.otherIssuer, { iss: 'https://licenses.attacker.test' })), refused('ArtifactIntegrity')),
    artifactVector('not-an-artifact-signature', 'A genuine offline token given as the signature (no typ keyforge.artifact).', listing(token), refused('ArtifactIntegrity')),
    artifactVector('other-artifact', 'A genuine signature of another artifact of the same release.', listing(await signArtifact(signers.new, { artifact: '00000000-0000-4000-8000-000000000001' })), refused('ArtifactIntegrity')),
    artifactVector('alg-none', 'alg "none" with the current kid and no signature.', listing(`${b64u(JSON.stringify({ alg: 'none', kid: published.new.kid, typ: 'JWT' }))}.${splitJws(artifactSignature).payload}.`), refused('ArtifactIntegrity')),
    artifactVector('bytes-not-matching-sha256', 'A genuine signature; one bit of the file flipped (same size).', listing(artifactSignature), refused('ArtifactIntegrity'), { bytes: otherFile }),
    artifactVector('bytes-truncated', 'A genuine signature; the file one byte short.', listing(artifactSignature), refused('ArtifactIntegrity'), { bytes: artifactFile.subarray(0, artifactFile.length - 1) }),
    artifactVector('listing-differs', 'A genuine signature, but the listing names another SHA-256 than the one signed.', listing(artifactSignature, { sha256: tamperedSha }), refused('ArtifactIntegrity')),
  ];

  return {
    format: 1,
    generator: 'pnpm sdk:vectors (sdks/conformance/generate.ts)',
    issuer: ISSUER,
    product: PRODUCT,
    clockToleranceSeconds: TOLERANCE,
    keys: {
      old: { kid: published.old.kid, seed: keys.old.seed, x: keys.old.x },
      new: { kid: published.new.kid, seed: keys.new.seed, x: keys.new.x },
      rogue: { kid: published.rogue.kid, seed: keys.rogue.seed, x: keys.rogue.x },
      device: { seed: keys.device.seed, x: keys.device.x },
      otherDevice: { seed: keys.otherDevice.seed, x: keys.otherDevice.x },
    },
    jwks,
    offlineTokens,
    licenseFiles,
    activationRequests,
    activationResponses,
    deactivationProofs,
    artifactSignatures,
  };

  function tokenOfEncrypted(text: string, licenseKey: string, deviceId?: string): string {
    // The generator decrypts with node:crypto only to put the expected claims in the vector.
    const envelope = fileEnvelope(text);
    const info = envelope.device === true ? `keyforge license file v1\n${deviceId}` : 'keyforge license file v1';
    const key = Buffer.from(nodeCrypto.hkdfSync('sha256', Buffer.from(licenseKey), Buffer.from(envelope.salt as string, 'base64url'), Buffer.from(info), 32));
    const data = Buffer.from(envelope.ct as string, 'base64url');
    const decipher = nodeCrypto.createDecipheriv('aes-256-gcm', key, Buffer.from(envelope.iv as string, 'base64url'));
    decipher.setAAD(Buffer.from('keyforge license file v1'));
    decipher.setAuthTag(data.subarray(data.length - 16));
    return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
  }
}

/** The file's text: two-space JSON and a final newline. */
export function serialize(vectors: Record<string, unknown>): string {
  return `${JSON.stringify(vectors, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(VECTORS_PATH, serialize(await generateVectors()));
  console.log(`Wrote ${VECTORS_PATH}`);
}
