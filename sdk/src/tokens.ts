import { jwtVerify, type JWTPayload } from 'jose';
import { KeyforgeError, VerificationError } from './errors.js';
import type { KeyRing } from './keys.js';

/**
 * The entitlement the server signed (the claims of `offlineCacheToken`, docs/integrate/rest-api.md "Verifying an offline token").
 * Unlike the rest of a validate answer, every field here is covered by the Ed25519 signature.
 */
export interface Entitlement {
  /** The license's id (`sub`) — never the key. */
  licenseId: string;
  tenantId: string;
  productId: string;
  /** The license's product. */
  product: string;
  /** Member products when the license is for a bundle, else null. */
  bundleProducts: string[] | null;
  features: string[];
  /** The license's own expiry (ISO 8601), null for perpetual. */
  licenseExpiresAt: string | null;
  isTrial: boolean;
  nodeLocked: boolean;
  /** Days the application may run offline on this token; null: none. */
  offlineGraceDays: number | null;
  maintenanceExpiresAt: string | null;
  minVersion: string | null;
  maxVersion: string | null;
  /** The `deviceId` the token is bound to, or null. */
  device: string | null;
  /** True when the server checked that `device` holds an activation (validate with `requireActivation`). */
  deviceActivated: boolean;
  /** When the server signed it (its clock). */
  issuedAt: Date;
  /** When it stops verifying (its `exp`): the end of the offline grace period, never after the license's expiry. */
  expiresAt: Date;
  /** The `kid` of the key that signed it. */
  keyId: string;
  /** Every claim as signed, including any a newer server adds. */
  claims: Readonly<JWTPayload>;
}

export interface VerifyOptions {
  keys: KeyRing;
  online: boolean;
  issuer: string;
  /** Accepted products: the token's `product`, or one of its `bundleProducts`, must be one of them. */
  products: readonly string[];
  /** "Now" as the check should see it (the server's clock as estimated by the client). */
  now: Date;
  clockToleranceSeconds: number;
  /** When set, the token must be bound to this device. */
  deviceId?: string;
  /** When true, the token must attest that its device holds an activation (`deviceActivated`). */
  requireActivation?: boolean;
  /** When set, the token must echo this challenge (a fresh online answer). */
  challenge?: string;
  signal?: AbortSignal;
}

const string = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const strings = (value: unknown): string[] | null => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : null);

/** Verifies an offline token: EdDSA only, a trusted key, issuer, expiry, then product, device and challenge. */
export async function verifyOfflineToken(token: string, options: VerifyOptions): Promise<Entitlement> {
  let verified: Awaited<ReturnType<typeof jwtVerify>>;
  try {
    verified = await jwtVerify(token, (header) => options.keys.keyFor(header.kid, { online: options.online, signal: options.signal }), {
      algorithms: ['EdDSA'],
      issuer: options.issuer,
      currentDate: options.now,
      clockTolerance: options.clockToleranceSeconds,
      requiredClaims: ['sub', 'iat', 'exp', 'product'],
    });
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw asVerificationError(error, options.issuer);
  }
  const { payload, protectedHeader } = verified;
  const product = string(payload.product)!;
  const bundleProducts = strings(payload.bundleProducts);
  if (!options.products.includes(product) && !bundleProducts?.some((member) => options.products.includes(member))) {
    throw new VerificationError('WrongProduct', `The license is for "${product}", not ${options.products.map((name) => `"${name}"`).join(' or ')}.`);
  }
  const device = string(payload.device);
  if (options.deviceId !== undefined && device !== options.deviceId) {
    throw new VerificationError('WrongDevice', device === null ? 'The token is not bound to a device, but this check asks for one.' : 'The token is bound to another device.');
  }
  if (options.requireActivation && payload.deviceActivated !== true) {
    throw new VerificationError('WrongDevice', 'The token does not attest that this device holds an activation: validate online with requireActivation.');
  }
  if (options.challenge !== undefined && payload.nonce !== options.challenge) {
    throw new VerificationError('ChallengeMismatch', 'The token does not echo this request\'s challenge: a replayed or foreign answer.');
  }
  return {
    licenseId: payload.sub!,
    tenantId: string(payload.tenant) ?? '',
    productId: string(payload.productId) ?? '',
    product,
    bundleProducts,
    features: strings(payload.features) ?? [],
    licenseExpiresAt: string(payload.licenseExpiresAt),
    isTrial: payload.isTrial === true,
    nodeLocked: payload.nodeLocked === true,
    offlineGraceDays: typeof payload.offlineGraceDays === 'number' ? payload.offlineGraceDays : null,
    maintenanceExpiresAt: string(payload.maintenanceExpiresAt),
    minVersion: string(payload.minVersion),
    maxVersion: string(payload.maxVersion),
    device,
    deviceActivated: payload.deviceActivated === true,
    issuedAt: new Date(payload.iat! * 1000),
    expiresAt: new Date(payload.exp! * 1000),
    keyId: protectedHeader.kid!,
    claims: payload,
  };
}

function asVerificationError(error: unknown, issuer: string): KeyforgeError {
  // Ours (an unknown key, a JWKS that could not be fetched) pass through.
  if (error instanceof KeyforgeError) return error;
  const { code, claim } = (error ?? {}) as { code?: string; claim?: string };
  if (code === 'ERR_JWT_EXPIRED') return new VerificationError('TokenExpired', 'The offline token has expired: the offline grace period is over; validate online.', { cause: error });
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'iss') return new VerificationError('WrongIssuer', `The offline token was not issued by ${issuer}.`, { cause: error });
  const reason = error instanceof Error ? error.message : String(error);
  return new VerificationError('TokenInvalid', `The offline token is not valid (${reason}): tampered, or not signed by this server.`, { cause: error });
}
