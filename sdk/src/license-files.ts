// The text formats of signed license files, activation requests and deactivation proofs, with WebCrypto only
// (docs/integrate/license-files.md describes each byte; the server reads and writes the same).
import { CompactSign, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { VerificationError } from './errors.js';
import { base64url, isKeyforgeKey, normalizeKey, randomToken } from './util.js';

export type ArmorLabel = 'LICENSE FILE' | 'ACTIVATION REQUEST' | 'DEACTIVATION PROOF';

/** The one-line form of an activation request (for a QR code): this prefix, then base64url of the same JSON. */
export const COMPACT_REQUEST_PREFIX = 'KFREQ1:';
const MAX_ARMORED_CHARS = 16_384;
const FILE_KEY_INFO = 'keyforge license file v1';
const REQUEST_MAC_INFO = 'keyforge activation request v1';
export const DEACTIVATION_KIND = 'keyforge-deactivation';
export const LICENSE_FILE_KIND = 'license-file';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** `-----BEGIN KEYFORGE <label>-----`, base64 in lines of 64, the END line. */
export function armor(label: ArmorLabel, text: string): string {
  const body = base64(encoder.encode(text));
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN KEYFORGE ${label}-----\n${lines.join('\n')}\n-----END KEYFORGE ${label}-----\n`;
}

const damaged = (message: string) => new VerificationError('TokenInvalid', message);

/** The text armored under `label` (white space, mail quote markers and surrounding text ignored). */
export function unarmor(label: ArmorLabel, text: string): string {
  const what = label.toLowerCase();
  if (typeof text !== 'string' || text.length > MAX_ARMORED_CHARS) throw damaged(`This is not a ${what}.`);
  const trimmed = text.trim();
  try {
    if (label === 'ACTIVATION REQUEST' && trimmed.startsWith(COMPACT_REQUEST_PREFIX)) return decoder.decode(fromBase64(trimmed.slice(COMPACT_REQUEST_PREFIX.length)));
    const begin = `-----BEGIN KEYFORGE ${label}-----`;
    const from = text.indexOf(begin);
    const to = from < 0 ? -1 : text.indexOf(`-----END KEYFORGE ${label}-----`, from);
    if (from < 0 || to < 0) throw damaged(`This is not a whole ${what}: its BEGIN and END lines must both be there.`);
    const body = text.slice(from + begin.length, to).replace(/^[ \t]*(?:>[ \t]*)+/gm, '').replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw damaged(`The ${what} is damaged: copy it again whole.`);
    return decoder.decode(fromBase64(body));
  } catch (error) {
    if (error instanceof VerificationError) throw error;
    throw damaged(`The ${what} is damaged: copy it again whole.`);
  }
}

function jsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw damaged(`The ${what} is damaged: its content is not readable.`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw damaged(`The ${what} is damaged: its content is not readable.`);
  return parsed as Record<string, unknown>;
}

async function hkdf(licenseKey: string, salt: Uint8Array, info: string): Promise<ArrayBuffer> {
  const ikm = await crypto.subtle.importKey('raw', encoder.encode(normalizeKey(licenseKey)), 'HKDF', false, ['deriveBits']);
  return crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: salt as BufferSource, info: encoder.encode(info) }, ikm, 256);
}

/**
 * The signed token inside a license file: as is, or decrypted (AES-256-GCM under HKDF-SHA256 of the license key and,
 * for a device file, the device id).
 */
export async function openLicenseFile(text: string, options: { licenseKey?: string; deviceId?: string }): Promise<string> {
  const envelope = jsonObject(unarmor('LICENSE FILE', text), 'license file');
  if (envelope.v !== 1) throw damaged('This license file is of an unknown version: update the SDK.');
  if (envelope.enc === null && typeof envelope.token === 'string') return envelope.token;
  if (envelope.enc !== 'A256GCM' || typeof envelope.salt !== 'string' || typeof envelope.iv !== 'string' || typeof envelope.ct !== 'string') throw damaged('The license file is damaged.');
  if (!options.licenseKey) throw damaged('This license file is encrypted: pass the licenseKey that opens it.');
  if (envelope.device === true && !options.deviceId) throw new VerificationError('WrongDevice', 'This license file is encrypted for one device: pass its deviceId.');
  const info = envelope.device === true ? `${FILE_KEY_INFO}\n${options.deviceId}` : FILE_KEY_INFO;
  try {
    const raw = await hkdf(options.licenseKey, fromBase64(envelope.salt), info);
    const key = await crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['decrypt']);
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64(envelope.iv) as BufferSource, additionalData: encoder.encode(FILE_KEY_INFO) }, key, fromBase64(envelope.ct) as BufferSource);
    return decoder.decode(plain);
  } catch {
    throw damaged('The license file does not open with this license key' + (envelope.device === true ? ' and device' : '') + ': another license or device, or the file was altered.');
  }
}

/** The device key pair of an offline activation, as kept in the store (a JWK with its private part). */
export interface DeviceKey {
  jwk: JWK;
  /** The public key `x`, base64url. */
  pub: string;
}

export async function newDeviceKey(): Promise<DeviceKey> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(privateKey);
  return { jwk, pub: jwk.x! };
}

/**
 * The license key's public hint (`ACME-…-WZ3P`), as the server shows it: which license, not the key. An imported
 * key's: its first and last 4 characters from 16 characters on (`abcd…wxyz`), its last 2 below (`…yz`).
 */
export function keyHint(licenseKey: string): string {
  const key = normalizeKey(licenseKey);
  if (!isKeyforgeKey(key)) return key.length >= 16 ? `${key.slice(0, 4)}…${key.slice(-4)}` : `…${key.slice(-2)}`;
  const parts = key.split('-');
  return `${parts[0]}-…-${parts[parts.length - 1]}`;
}

export interface RequestFields {
  v: 1;
  hint: string;
  device: string;
  name: string | null;
  pub: string;
  challenge: string;
  iat: number;
  product: string[] | null;
  version: string | null;
}

/** HMAC-SHA256 under HKDF-SHA256(license key, no salt, "keyforge activation request v1") over the fields in order. */
export async function requestMac(licenseKey: string, fields: RequestFields): Promise<string> {
  const raw = await hkdf(licenseKey, new Uint8Array(0), REQUEST_MAC_INFO);
  const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const message = JSON.stringify([REQUEST_MAC_INFO, fields.hint, fields.device, fields.name, fields.pub, fields.challenge, fields.iat, fields.product, fields.version]);
  return base64url(new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(message))));
}

/** The activation request's armored text and its one-line (QR) form. */
export function encodeRequest(fields: RequestFields & { mac: string }): { request: string; compact: string } {
  const json = JSON.stringify(fields);
  return { request: armor('ACTIVATION REQUEST', json), compact: COMPACT_REQUEST_PREFIX + base64url(encoder.encode(json)) };
}

/** A deactivation proof: a compact JWS (EdDSA) by the device's private key naming its activation, license and device. */
export async function signDeactivationProof(jwk: JWK, claims: { activation: string; license: string; device: string; iat: number; jti?: string }): Promise<string> {
  const key = await importJWK(jwk, 'EdDSA');
  // The claims in this order (the conformance vectors reproduce proofs byte for byte); jti is given only by tests.
  const { activation, license, device, iat } = claims;
  const payload = encoder.encode(JSON.stringify({ kind: DEACTIVATION_KIND, activation, license, device, iat, jti: claims.jti ?? randomToken(16) }));
  const jws = await new CompactSign(payload).setProtectedHeader({ alg: 'EdDSA' }).sign(key);
  return armor('DEACTIVATION PROOF', jws);
}
