import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { canonicalLicenseKey } from '../../crypto/license-key.js';
import { AppError } from '../../domain/errors.js';
import { DAY_MS } from '../../domain/countdown.js';
import type { AuditActor } from '../audit/audit-log.js';
import { recordAudit } from '../audit/audit-log.js';
import type { LicensingContext, SecretsContext, TokenSigner } from '../context.js';
import { isUuid } from '../listing.js';
import { DEVICE_NOT_ACTIVATED, touchActiveDevice } from '../licenses/activations.js';
import { findLicenseByKey, findLicenseRecordById, type LicenseRecord } from '../licenses/license-record.js';
import { licenseEntity } from '../licenses/license-record.js';
import { LICENSE_NOT_FOUND, checkEntitlement, rejected } from '../licenses/rules.js';
import { entitlementClaims } from '../licenses/validate.js';
import { armor } from './armor.js';

/** What issuing a license file needs: the database, the secrets, the signer of offline tokens and its issuer. */
export interface LicenseFileContext extends SecretsContext {
  signer: TokenSigner;
  issuer: string;
}

/** A product's `licenseFileTtlDays` (and a `ttlDays` asked for one file) lie within these bounds. */
export const LICENSE_FILE_TTL_DAYS = { min: 1, max: 3650, default: 30 } as const;

/** The `kind` claim that tells a license file from an online offline token. */
export const LICENSE_FILE_KIND = 'license-file';

/** The info string of the HKDF that derives a file's AES-256-GCM key; also its additional authenticated data. */
const FILE_KEY_INFO = 'keyforge license file v1';

export interface LicenseFileBinding {
  /** Binds the file to this device (`device` claim). */
  deviceId?: string | null;
  /** The server checked that the device holds an activation (`deviceActivated`). */
  deviceActivated?: boolean;
  /** The activation request's challenge (`nonce`): the SDK accepts the file only for the request it made. */
  challenge?: string;
  /** The device's Ed25519 public key (base64url), for an offline activation (`deviceKey`). */
  devicePublicKey?: string;
  /** The activation (`activation`): named by the device's deactivation proof. */
  activationId?: string;
}

export interface IssuedLicenseFile {
  /** The armored file (`-----BEGIN KEYFORGE LICENSE FILE-----`). */
  licenseFile: string;
  issuedAt: Date;
  expiresAt: Date;
  deviceId: string | null;
  encrypted: boolean;
}

/**
 * Signs a license file: the claims of the online offline token (entitlementClaims), `kind: "license-file"`, its
 * `ttl` in seconds, and the device binding. It expires `ttlDays` after now (default: the product's
 * licenseFileTtlDays), never after the license does. With `licenseKey` the file is encrypted (encryptLicenseFile).
 */
export async function signLicenseFile(
  ctx: LicenseFileContext,
  license: LicenseRecord,
  options: LicenseFileBinding & { ttlDays?: number | null; licenseKey?: string | null },
): Promise<IssuedLicenseFile> {
  const ttlDays = options.ttlDays ?? (await productTtlDays(ctx, license.productId));
  if (!Number.isInteger(ttlDays) || ttlDays < LICENSE_FILE_TTL_DAYS.min || ttlDays > LICENSE_FILE_TTL_DAYS.max) {
    throw new AppError('InvalidRequest', `ttlDays must be a whole number of days from ${LICENSE_FILE_TTL_DAYS.min} to ${LICENSE_FILE_TTL_DAYS.max}.`, { fields: { ttlDays: 'out of range' } });
  }
  const issuedAt = ctx.now;
  let expires = issuedAt.getTime() + ttlDays * DAY_MS;
  if (license.expiresAt) expires = Math.min(expires, license.expiresAt.getTime());
  const expiresAt = new Date(expires);
  const token = await ctx.signer.sign(
    {
      ...entitlementClaims(license),
      kind: LICENSE_FILE_KIND,
      // Exactly exp - iat: both are whole seconds (JWT NumericDate) the signer takes from these two instants.
      ttl: numericDate(expires) - numericDate(issuedAt.getTime()),
      ...(options.deviceId ? { device: options.deviceId } : {}),
      ...(options.deviceId && options.deviceActivated ? { deviceActivated: true } : {}),
      ...(options.challenge ? { nonce: options.challenge } : {}),
      ...(options.devicePublicKey ? { deviceKey: options.devicePublicKey } : {}),
      ...(options.activationId ? { activation: options.activationId } : {}),
    },
    { issuedAt, expiresAt },
  );
  const envelope = options.licenseKey ? encryptLicenseFile(token, options.licenseKey, options.deviceId ?? null) : { v: 1, enc: null, token };
  return {
    licenseFile: armor('LICENSE FILE', Buffer.from(JSON.stringify(envelope))),
    issuedAt,
    expiresAt,
    deviceId: options.deviceId ?? null,
    encrypted: Boolean(options.licenseKey),
  };
}

/** An instant (ms) as the signer writes it in `iat` and `exp`: whole seconds, rounded down (signing-keys.ts). */
const numericDate = (ms: number) => Math.floor(ms / 1000);

/**
 * The encrypted envelope (docs/integrate/license-files.md "Encryption"): AES-256-GCM under
 * HKDF-SHA256(ikm = the canonical license key (`canonicalLicenseKey`: a Keyforge key normalised, an imported one trimmed), salt = 16 random bytes, info = "keyforge license file v1", plus
 * "\n" and the device id for a device file), a random 12-byte IV, the info string as additional data.
 */
export function encryptLicenseFile(token: string, licenseKey: string, deviceId: string | null) {
  const key = canonicalLicenseKey(licenseKey);
  if (!key) throw new AppError('InvalidRequest', 'licenseKey is not a license key.', { fields: { licenseKey: 'malformed' } });
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const info = deviceId ? `${FILE_KEY_INFO}\n${deviceId}` : FILE_KEY_INFO;
  const aesKey = Buffer.from(hkdfSync('sha256', Buffer.from(key), salt, Buffer.from(info), 32));
  const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
  cipher.setAAD(Buffer.from(FILE_KEY_INFO));
  const ciphertext = Buffer.concat([cipher.update(token, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { v: 1, enc: 'A256GCM', kdf: 'HKDF-SHA256', device: deviceId !== null, salt: salt.toString('base64url'), iv: iv.toString('base64url'), ct: ciphertext.toString('base64url') };
}

/** The product's licenseFileTtlDays. */
export async function productTtlDays(ctx: SecretsContext, productId: string): Promise<number> {
  const product = await ctx.db.prisma.product.findUnique({ where: { id: productId }, select: { licenseFileTtlDays: true } });
  return product?.licenseFileTtlDays ?? LICENSE_FILE_TTL_DAYS.default;
}

const refused = (message: string) => new AppError('Conflict', message);

/** The license of an id in the tenant (NotFound otherwise, a malformed id included). */
export async function tenantLicenseRecord(ctx: SecretsContext, tenantId: string, licenseId: string): Promise<LicenseRecord> {
  const license = isUuid(licenseId) ? await findLicenseRecordById(ctx.db.sql, tenantId, licenseId) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** Whether a key is this license's own (its current key, or a reissued one within its overlap). */
export async function isKeyOf(ctx: SecretsContext, license: Pick<LicenseRecord, 'id'>, licenseKey: string): Promise<boolean> {
  const found = await findLicenseByKey(ctx.db.sql, ctx.secrets, licenseKey, ctx.now);
  return found?.id === license.id;
}

export interface IssueLicenseFileInput {
  tenantId: string;
  licenseId: string;
  /** A device file: the device must hold an active activation of the license. */
  deviceId?: string | null;
  /** Default: the product's licenseFileTtlDays. */
  ttlDays?: number | null;
  /** Given: the file is encrypted under it (it must be this license's key). The server never stores keys. */
  licenseKey?: string | null;
  /** Who the activity log names (staff: auditActor(ctx); the portal: "customer <email>"). */
  actor: AuditActor;
}

/**
 * A license file for a license of the tenant, for whoever the caller authorized (staff in GraphQL, a customer in the
 * portal): refused (Conflict) while the license is revoked, suspended or expired, and for a device that holds no
 * activation. Logged as IssueLicenseFile.
 */
export async function issueLicenseFile(ctx: LicenseFileContext, input: IssueLicenseFileInput): Promise<IssuedLicenseFile> {
  const license = await tenantLicenseRecord(ctx, input.tenantId, input.licenseId);
  const rejection = checkEntitlement(license, ctx.now, null);
  if (rejection) throw refused(`${rejection.message} No license file is issued for it.`);
  const deviceId = input.deviceId?.trim() || null;
  let activation: { id: string; devicePublicKey: string | null } | null = null;
  if (deviceId) {
    if (deviceId.length > 256) throw new AppError('InvalidRequest', 'deviceId is at most 256 characters.', { fields: { deviceId: 'too long' } });
    activation = await ctx.db.prisma.activation.findFirst({ where: { tenantId: input.tenantId, licenseId: license.id, deviceId, deactivatedAt: null }, select: { id: true, devicePublicKey: true } });
    if (!activation) throw refused('This device holds no activation of this license: activate it first (online, or offline with an activation request).');
  }
  if (input.licenseKey && !(await isKeyOf(ctx, license, input.licenseKey))) {
    throw new AppError('InvalidRequest', 'This is not the key of this license: the file would not open with it.', { fields: { licenseKey: 'not this license\'s key' } });
  }
  const issued = await signLicenseFile(ctx, license, {
    deviceId,
    deviceActivated: Boolean(activation),
    activationId: activation?.id,
    devicePublicKey: activation?.devicePublicKey ?? undefined,
    ttlDays: input.ttlDays,
    licenseKey: input.licenseKey,
  });
  const { keyHint } = await ctx.db.prisma.license.findUniqueOrThrow({ where: { id: license.id }, select: { keyHint: true } });
  await ctx.db.prisma.$transaction(async (tx) => {
    const details = { licenseId: license.id, deviceId, expiresAt: issued.expiresAt.toISOString(), encrypted: issued.encrypted };
    await recordAudit(tx, { tenantId: input.tenantId, action: 'IssueLicenseFile', entityType: 'License', entityId: license.id, entity: licenseEntity({ keyHint }, license.productName), details }, input.actor, ctx.now);
  });
  return issued;
}

/**
 * The application's own request for a file (REST `POST /api/v1/license-file`): the key is the credential, and, for a
 * device file, the device must hold an activation. Answers like validate: a rejection is `isValid: false`.
 */
export async function licenseFileForKey(ctx: LicensingContext, input: { licenseKey: string; deviceId?: string; encrypt?: boolean }) {
  const license = await findLicenseByKey(ctx.db.sql, ctx.secrets, input.licenseKey, ctx.now);
  if (!license) return rejected(LICENSE_NOT_FOUND);
  await ctx.chargeTenant(license.tenantId, license.id);
  const rejection = checkEntitlement(license, ctx.now, null) ?? (input.deviceId && !(await touchActiveDevice(ctx, license, input.deviceId)) ? DEVICE_NOT_ACTIVATED : null);
  if (rejection) return rejected(rejection);
  const activation = input.deviceId
    ? await ctx.db.prisma.activation.findFirst({ where: { tenantId: license.tenantId, licenseId: license.id, deviceId: input.deviceId, deactivatedAt: null }, select: { id: true, devicePublicKey: true } })
    : null;
  const issued = await signLicenseFile(ctx, license, {
    deviceId: input.deviceId,
    deviceActivated: Boolean(activation),
    activationId: activation?.id,
    devicePublicKey: activation?.devicePublicKey ?? undefined,
    licenseKey: input.encrypt ? input.licenseKey : null,
  });
  return { isValid: true as const, licenseFile: issued.licenseFile, issuedAt: issued.issuedAt.toISOString(), expiresAt: issued.expiresAt.toISOString(), deviceId: issued.deviceId, encrypted: issued.encrypted };
}
