import { createHmac, createPublicKey, hkdfSync, randomUUID, timingSafeEqual, verify } from 'node:crypto';
import { canonicalLicenseKey } from '../../crypto/license-key.js';
import { sha256 } from '../../crypto/secrets.js';
import { AppError } from '../../domain/errors.js';
import type { AuditActor } from '../audit/audit-log.js';
import { lockTenantAudit, recordAudit } from '../audit/audit-log.js';
import { isUuid } from '../listing.js';
import { MAX_READS, SEAT_TRANSACTION, activationRejection, releaseSeat, seatsExhausted, type Registration } from '../licenses/activations.js';
import { findLicenseByKey, type LicenseRecord } from '../licenses/license-record.js';
import { parseVersion, remainingActivations } from '../licenses/rules.js';
import { activationData, emitEvent, eventBody } from '../webhooks/events.js';
import { invalidArmoredInput as invalid, readArmor, readJsonObject } from './armor.js';
import { productTtlDays, signLicenseFile, tenantLicenseRecord, type IssuedLicenseFile, type LicenseFileContext } from './license-file.js';

/** The HKDF info of the request's MAC key, and the first element of the MAC's message. */
const REQUEST_MAC_INFO = 'keyforge activation request v1';
/** The `kind` of a deactivation proof's signed payload. */
const DEACTIVATION_KIND = 'keyforge-deactivation';

/** An activation request as the SDK's createActivationRequest writes it (docs/integrate/license-files.md). */
export interface ActivationRequest {
  v: 1;
  /** The license key's public hint (`ACME-…-WZ3P`): which license, without the key. */
  hint: string;
  device: string;
  name: string | null;
  /** The device's fresh Ed25519 public key, base64url (32 bytes). */
  pub: string;
  /** 32 random bytes, base64url: the response echoes it; a request is accepted once. */
  challenge: string;
  /** When the device wrote it (its clock, seconds). */
  iat: number;
  product: string[] | null;
  version: string | null;
  /** HMAC-SHA256 under a key derived from the license key (requestMac). */
  mac: string;
}

const BASE64URL_32 = /^[A-Za-z0-9_-]{43}$/;
const optionalString = (value: unknown, max: number) => (value === undefined || value === null ? null : typeof value === 'string' && value.length <= max ? value : undefined);

/** Reads and checks the shape of an activation request (armored, or the one-line KFREQ1 form). */
export function parseActivationRequest(text: unknown): ActivationRequest {
  const field = 'request';
  const raw = readJsonObject(readArmor('ACTIVATION REQUEST', text, field), field, 'activation request');
  const damaged = (what: string) => invalid(field, `The activation request is damaged or not from the Keyforge SDK (${what}).`);
  if (raw.v !== 1) throw damaged('unknown version');
  const { hint, device, pub, challenge, iat, mac } = raw;
  if (typeof hint !== 'string' || hint.length < 3 || hint.length > 40) throw damaged('hint');
  if (typeof device !== 'string' || !device || device.length > 256) throw damaged('device');
  const name = optionalString(raw.name, 200);
  const version = optionalString(raw.version, 64);
  if (name === undefined) throw damaged('name');
  if (version === undefined) throw damaged('version');
  if (typeof pub !== 'string' || !BASE64URL_32.test(pub)) throw damaged('pub');
  if (typeof challenge !== 'string' || !BASE64URL_32.test(challenge)) throw damaged('challenge');
  if (typeof mac !== 'string' || !BASE64URL_32.test(mac)) throw damaged('mac');
  if (typeof iat !== 'number' || !Number.isSafeInteger(iat) || iat < 0) throw damaged('iat');
  let product: string[] | null = null;
  if (raw.product !== undefined && raw.product !== null) {
    if (!Array.isArray(raw.product) || !raw.product.length || raw.product.length > 20 || raw.product.some((item) => typeof item !== 'string' || !item || item.length > 200)) throw damaged('product');
    product = raw.product as string[];
  }
  return { v: 1, hint, device, name, pub, challenge, iat, product, version, mac };
}

/**
 * The request's MAC: HMAC-SHA256 with the key HKDF-SHA256(ikm = the canonical license key (`canonicalLicenseKey`), salt = empty,
 * info = "keyforge activation request v1"), over the JSON array of the info string and every other field in order.
 * It proves the request was written with the key, without the key in it.
 */
export function requestMac(licenseKey: string, request: Omit<ActivationRequest, 'mac'>): string {
  const macKey = Buffer.from(hkdfSync('sha256', Buffer.from(canonicalLicenseKey(licenseKey) ?? ''), Buffer.alloc(0), Buffer.from(REQUEST_MAC_INFO), 32));
  const message = JSON.stringify([REQUEST_MAC_INFO, request.hint, request.device, request.name, request.pub, request.challenge, request.iat, request.product, request.version]);
  return createHmac('sha256', macKey).update(message).digest('base64url');
}

export interface ActivateFromRequestInput {
  tenantId: string;
  /** The license the uploader chose (its page). Without it, the license of the tenant whose key hint the request names. */
  licenseId?: string | null;
  /** The activation request's text. */
  requestText: string;
  /** The license key, when the uploader has it (a customer who re-entered it): then the request's MAC is verified too. */
  licenseKey?: string | null;
  /** Who the activity log names (staff: auditActor(ctx); the portal: "customer <email>"). */
  actor: AuditActor;
  /**
   * Whether a request may bind a new device key to a device that already holds a seat: with another key (the device
   * re-requesting after losing its store), or online, with none. Staff may free devices anyway; a customer only with
   * the key (the MAC verified): a new key would let their proof free the device around the portal's free limit.
   */
  mayRebindDevice: boolean;
}

export interface OfflineActivation extends IssuedLicenseFile {
  activationId: string;
  licenseId: string;
  /** True when the device already held a seat of the license (node-lock reuse): no new seat was taken. */
  reused: boolean;
  remainingActivations: number;
}

/** Rolls the transaction back with the rejection it carries (or, with none, to read the license again). */
class Rollback extends Error {
  constructor(readonly registration: Registration | null) {
    super('rollback');
  }
}

/**
 * Activates a device from its offline activation request: the seat is taken by activation_register, under the rules
 * and the row lock of an online activation (entitlement, product, node lock, seats, the same device reusing its
 * seat), the request's challenge standing in for the nonce. In the same transaction the device's public key is
 * stored on the activation and the challenge recorded, so a request is accepted once (a replay is Conflict), and the
 * device license file is signed (bound to the device, its key, the challenge and the activation). A refused
 * activation changes nothing: the same request may be uploaded again once a seat is free.
 */
export async function activateFromRequest(ctx: LicenseFileContext, input: ActivateFromRequestInput): Promise<OfflineActivation> {
  const request = parseActivationRequest(input.requestText);
  const version = request.version === null ? null : parseVersion(request.version);
  const licenseId = await requestLicenseId(ctx, input, request);
  let ttlDays: number | null = null;
  for (let read = 1; ; read++) {
    const license = await tenantLicenseRecord(ctx, input.tenantId, licenseId);
    // Read before the transaction: inside it, a second pooled connection would be waited for while the row lock is held.
    ttlDays ??= await productTtlDays(ctx, license.productId);
    const rejection = activationRejection(license, ctx.now, version, { deviceId: request.device, product: request.product ?? undefined });
    if (rejection) throw new AppError('Conflict', `${rejection.message} (${rejection.errorCode})`);
    try {
      return await registerOffline(ctx, license, request, input.actor, ttlDays, input.mayRebindDevice || Boolean(input.licenseKey));
    } catch (error) {
      if (!(error instanceof Rollback)) throw error;
      if (error.registration) {
        const refusal = await seatsExhausted(ctx, license, error.registration);
        throw new AppError('Conflict', `${refusal.message} (${refusal.errorCode})`);
      }
      if (read >= MAX_READS) throw new AppError('ServiceUnavailable', 'The license is being changed right now; retry shortly.', { retryAfterSeconds: 1 });
    }
  }
}

/** Which license the request is for: the one chosen (whose key hint it must name), else the tenant's one with its hint. */
async function requestLicenseId(ctx: LicenseFileContext, input: ActivateFromRequestInput, request: ActivationRequest): Promise<string> {
  let candidates: { id: string; keyHint: string }[];
  if (input.licenseId) {
    if (!isUuid(input.licenseId)) throw new AppError('NotFound', 'License not found.');
    candidates = await ctx.db.prisma.license.findMany({ where: { id: input.licenseId, tenantId: input.tenantId }, select: { id: true, keyHint: true } });
    if (!candidates.length) throw new AppError('NotFound', 'License not found.');
    if (candidates[0].keyHint !== request.hint) throw invalid('request', `This request was written for the key ${request.hint}, not this license's key ${candidates[0].keyHint}.`);
  } else {
    candidates = await ctx.db.prisma.license.findMany({ where: { tenantId: input.tenantId, keyHint: request.hint }, select: { id: true, keyHint: true }, take: 2 });
    if (!candidates.length) throw new AppError('NotFound', `No license of this company has the key ${request.hint}.`);
    if (candidates.length > 1 && !input.licenseKey) throw invalid('request', `Several licenses have keys like ${request.hint}: upload the request from the license's own page.`);
  }
  if (input.licenseKey) {
    const license = await findLicenseByKey(ctx.db.sql, ctx.secrets, input.licenseKey, ctx.now);
    if (!license || license.tenantId !== input.tenantId || (input.licenseId && license.id !== input.licenseId)) {
      throw invalid('licenseKey', 'This is not the key of this license.');
    }
    const expected = Buffer.from(requestMac(input.licenseKey, request));
    if (!timingSafeEqual(expected, Buffer.from(request.mac))) throw invalid('request', 'This request was not written with this license key (its MAC does not match): altered, or for another key.');
    return license.id;
  }
  return candidates[0].id;
}

async function registerOffline(ctx: LicenseFileContext, license: LicenseRecord, request: ActivationRequest, actor: AuditActor, ttlDays: number, mayRebind: boolean): Promise<OfflineActivation> {
  return ctx.db.prisma.$transaction(async (tx) => {
    await lockTenantAudit(tx, license.tenantId); // before the license row: see lockTenantAudit
    const activationId = randomUUID();
    const eventId = randomUUID();
    const created = { id: activationId, licenseId: license.id, deviceId: request.device, deviceName: request.name, createdAt: ctx.now };
    const body = eventBody({ id: eventId, type: 'activation.created', createdAt: ctx.now, tenantId: license.tenantId, data: activationData(created) });
    // The challenge as this activation's nonce: issued and spent in the same transaction.
    const nonceDigest = sha256(`offline-request:${request.challenge}`);
    await tx.$executeRaw`INSERT INTO nonces (digest, expires_at, created_at) VALUES (${nonceDigest}, ${new Date(ctx.now.getTime() + 60_000)}::timestamptz, ${ctx.now}::timestamptz) ON CONFLICT (digest) DO NOTHING`;
    const [registration] = await tx.$queryRawUnsafe<Registration[]>(
      'SELECT * FROM activation_register($1::uuid, $2, $3::timestamptz, $4, $5::timestamptz, $6::uuid, $7, $8, $9, $10, $11, $12::uuid, $13)',
      license.id, license.status, license.expiresAt, nonceDigest, ctx.now, activationId, request.device, request.name, request.version, null, null, eventId, body,
    );
    if (registration.outcome === 'changed') throw new Rollback(null);
    if (registration.outcome === 'seats_exhausted') throw new Rollback(registration);
    if (registration.outcome === 'nonce_invalid') throw new AppError('Conflict', 'This activation request has been used already: write a new one on the device.');
    const reused = registration.outcome === 'reused';
    const activation = reused
      ? await tx.activation.findFirstOrThrow({ where: { licenseId: license.id, deviceId: request.device, deactivatedAt: null }, select: { id: true } })
      : { id: activationId };
    const recorded = await tx.$executeRaw`
      INSERT INTO offline_activation_requests (challenge_digest, tenant_id, license_id, activation_id, created_at)
      VALUES (${sha256(request.challenge)}, ${license.tenantId}::uuid, ${license.id}::uuid, ${activation.id}::uuid, ${ctx.now}::timestamptz)
      ON CONFLICT (challenge_digest) DO NOTHING`;
    if (!recorded) throw new AppError('Conflict', 'This activation request has been used already: write a new one on the device.');
    // Binding a key to a device that already holds a seat needs mayRebind (ActivateFromRequestInput.mayRebindDevice):
    // whether the device holds it with another key, or online with none (a key bound there would let a proof free a
    // device activated online). Without it, only the device's own key is accepted again.
    const keep = mayRebind || !reused ? {} : { devicePublicKey: request.pub };
    const bound = await tx.activation.updateMany({ where: { id: activation.id, ...keep }, data: { devicePublicKey: request.pub } });
    if (!bound.count) {
      const current = await tx.activation.findUniqueOrThrow({ where: { id: activation.id }, select: { devicePublicKey: true } });
      throw new AppError(
        'Conflict',
        current.devicePublicKey === null
          ? 'This device is already activated online: enter the license key with the request, or free the device first, then activate it offline.'
          : 'This device is already activated with another device key: enter the license key with the request, or free the device first, then activate it again.',
      );
    }
    const issued = await signLicenseFile(ctx, license, {
      deviceId: request.device,
      deviceActivated: true,
      challenge: request.challenge,
      devicePublicKey: request.pub,
      activationId: activation.id,
      ttlDays,
    });
    const { keyHint } = await tx.license.findUniqueOrThrow({ where: { id: license.id }, select: { keyHint: true } });
    const details = { licenseId: license.id, deviceId: request.device, deviceName: request.name, reused, expiresAt: issued.expiresAt.toISOString() };
    await recordAudit(tx, { tenantId: license.tenantId, action: 'ActivateOffline', entityType: 'Activation', entityId: activation.id, entity: `${request.name ?? request.device} on ${keyHint}`, details }, actor, ctx.now);
    const seats = { maxActivations: registration.max_activations, currentActivations: registration.seats_used };
    return { ...issued, activationId: activation.id, licenseId: license.id, reused, remainingActivations: remainingActivations(seats) };
  }, SEAT_TRANSACTION);
}

export interface DeactivateFromProofInput {
  tenantId: string;
  /** The license the uploader chose: the proof must be for one of its devices. */
  licenseId?: string | null;
  proofText: string;
  actor: AuditActor;
}

/**
 * Frees the one device a deactivation proof names: the proof is a compact JWS signed (EdDSA) by the private key of
 * the device, verified against the public key stored at its offline activation, and it names that activation, its
 * license and its device. A proof works once: the activation it names is then deactivated for good (the device's next
 * activation is another one, with another key). Logged as DeactivateOffline; emits activation.deactivated.
 */
export async function deactivateFromProof(ctx: LicenseFileContext, input: DeactivateFromProofInput) {
  const field = 'proof';
  const jws = readArmor('DEACTIVATION PROOF', input.proofText, field).toString('utf8');
  const damaged = invalid(field, 'The deactivation proof is damaged or not from the Keyforge SDK.');
  const parts = jws.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]+$/.test(part))) throw damaged;
  const header = readJsonObject(Buffer.from(parts[0], 'base64url'), field, 'deactivation proof');
  const payload = readJsonObject(Buffer.from(parts[1], 'base64url'), field, 'deactivation proof');
  if (header.alg !== 'EdDSA' || payload.kind !== DEACTIVATION_KIND) throw damaged;
  const { activation: activationId, license: licenseId, device } = payload;
  if (typeof activationId !== 'string' || !isUuid(activationId) || typeof licenseId !== 'string' || !isUuid(licenseId) || typeof device !== 'string') throw damaged;
  if (input.licenseId && input.licenseId !== licenseId) throw invalid(field, 'This proof is for a device of another license.');
  const activation = await ctx.db.prisma.activation.findFirst({
    where: { id: activationId, tenantId: input.tenantId, licenseId },
    include: { license: { select: { keyHint: true, maxActivations: true, currentActivations: true } } },
  });
  if (!activation) throw new AppError('NotFound', 'The device this proof names is not an activation of this company\'s licenses.');
  if (!activation.devicePublicKey) throw new AppError('Conflict', 'This device was not activated offline, so it has no key to check a proof against: free it from the license page.');
  if (activation.deviceId !== device || !verifyEd25519(activation.devicePublicKey, `${parts[0]}.${parts[1]}`, parts[2])) {
    throw invalid(field, 'The proof is not signed by this device\'s key: altered or forged.');
  }
  if (activation.deactivatedAt) throw new AppError('Conflict', 'This device was freed already: the proof has been used.');
  const freed = await ctx.db.prisma.$transaction(async (tx) => {
    await lockTenantAudit(tx, input.tenantId); // before the license row: see lockTenantAudit
    if (!(await releaseSeat(tx, activation, ctx.now))) return false;
    await emitEvent(tx, input.tenantId, 'activation.deactivated', activationData({ ...activation, deactivatedAt: ctx.now }), ctx.now);
    const details = { licenseId: activation.licenseId, deviceId: activation.deviceId, deviceName: activation.deviceName };
    const entity = `${activation.deviceName ?? activation.deviceId ?? activation.id} on ${activation.license.keyHint}`;
    await recordAudit(tx, { tenantId: input.tenantId, action: 'DeactivateOffline', entityType: 'Activation', entityId: activation.id, entity, details }, input.actor, ctx.now);
    return true;
  }, SEAT_TRANSACTION);
  if (!freed) throw new AppError('Conflict', 'This device was freed already: the proof has been used.');
  return { activationId: activation.id, licenseId: activation.licenseId, deviceId: activation.deviceId, deviceName: activation.deviceName, deactivatedAt: ctx.now };
}

function verifyEd25519(publicKey: string, signingInput: string, signature: string): boolean {
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
    return verify(null, Buffer.from(signingInput), key, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}
