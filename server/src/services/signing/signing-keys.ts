import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import type { SecretsContext, ServiceContext, TokenSigner } from '../context.js';

export const TOKEN_ALGORITHM = 'EdDSA';

type KeyRow = { kid: string; publicJwk: unknown; privateKeyEncrypted: string };

const trustCache = new Map<string, boolean>();

/**
 * A signing-key row is genuine only if its private key decrypts under this server's secret and matches the
 * published public key: the app's database role can insert rows, but cannot seal a private key, so a row
 * it planted is neither published nor used to sign or verify.
 */
export function isTrustedKey(secrets: ServiceContext['secrets'], row: KeyRow): boolean {
  const cacheKey = `${row.kid}\n${JSON.stringify(row.publicJwk)}\n${row.privateKeyEncrypted}`;
  let trusted = trustCache.get(cacheKey);
  if (trusted === undefined) {
    try {
      const publicKey = createPublicKey(createPrivateKey(secrets.decrypt(row.privateKeyEncrypted))).export({ format: 'jwk' });
      const published = row.publicJwk as JWK;
      trusted = published.kty === publicKey.kty && published.crv === publicKey.crv && published.x === publicKey.x && published.kid === row.kid;
    } catch {
      trusted = false;
    }
    if (trustCache.size > 1000) trustCache.clear();
    trustCache.set(cacheKey, trusted);
  }
  return trusted;
}

/** The genuine, unretired signing keys, newest first. */
export async function trustedSigningKeys({ db, secrets }: Pick<ServiceContext, 'db' | 'secrets'>) {
  const rows = await db.prisma.signingKey.findMany({ where: { retiredAt: null }, orderBy: { createdAt: 'desc' } });
  return rows.filter((row) => isTrustedKey(secrets, row));
}

/** How long clients and CDNs may cache the JWKS (its Cache-Control max-age), and so how long a new key is published before it signs. */
export const JWKS_MAX_AGE_SECONDS = 300;

/**
 * The key that signs at `now`: of the genuine, unretired keys, the one whose signsFrom is latest and not after `now`
 * (a key published less than a JWKS cache lifetime ago waits; the one before keeps signing). Created on first use;
 * an advisory lock makes concurrent first starts of several replicas agree on one key.
 */
export async function loadTokenSigner({ db, secrets, now }: SecretsContext, issuer: string): Promise<TokenSigner> {
  const row = await db.prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('keyforge.signing_keys'))`;
    const candidates = await tx.signingKey.findMany({ where: { retiredAt: null }, orderBy: { signsFrom: 'desc' } });
    const trusted = candidates.filter((row) => isTrustedKey(secrets, row));
    // None due yet (only a pending key): the earliest due one signs rather than none.
    const signing = trusted.find((row) => row.signsFrom <= now) ?? trusted[trusted.length - 1];
    if (signing) return signing;
    const created = await newKeyRow(secrets);
    return tx.signingKey.create({ data: { ...created, createdAt: now, signsFrom: now } });
  });
  return tokenSigner(createPrivateKey(secrets.decrypt(row.privateKeyEncrypted)), row.kid, issuer);
}

/**
 * The signer of one Ed25519 key: what loadTokenSigner returns for the key that signs now (and what
 * sdks/conformance/generate.ts signs its test vectors with, from fixed keys).
 */
export function tokenSigner(privateKey: KeyObject, kid: string, issuer: string): TokenSigner {
  const header = base64url(JSON.stringify({ alg: TOKEN_ALGORITHM, kid, typ: 'JWT' }));
  return {
    kid,
    // A compact JWS (RFC 7515) signed by node:crypto's one-shot Ed25519 on the thread pool: ~15 µs of CPU less per
    // token than jose's WebCrypto path (its algorithm normalisation and key wrapping), and, unlike a synchronous
    // signature, not on the event loop's thread (docs/performance.md). Verified with jose (test/validate.test.ts, the SDK).
    sign: async (claims, { issuedAt, expiresAt }) => {
      const payload = { ...claims, iss: issuer, iat: Math.floor(issuedAt.getTime() / 1000), exp: Math.floor(expiresAt.getTime() / 1000) };
      return signCompact(payload);
    },
    signPayload: (payload) => signCompact(payload),
  };
  async function signCompact(payload: object): Promise<string> {
    const signingInput = `${header}.${base64url(JSON.stringify(payload))}`;
    const signature = await signOnThreadPool(null, Buffer.from(signingInput), privateKey);
    return `${signingInput}.${signature.toString('base64url')}`;
  }
}

const base64url = (text: string) => Buffer.from(text).toString('base64url');
// The callback form of crypto.sign runs on libuv's thread pool; promisified, it resolves with the signature bytes.
const signOnThreadPool = promisify(sign);

/**
 * A signer that follows rotations: every `refreshMs` it checks which key is active (one indexed read) and
 * switches when another process rotated it. While the database is away it keeps the key it has.
 */
export async function refreshingTokenSigner(ctx: Pick<ServiceContext, 'db' | 'secrets'>, clock: () => Date, issuer: string, refreshMs: number, onError: (error: Error) => void): Promise<TokenSigner & { stop(): void }> {
  let current = await loadTokenSigner({ ...ctx, now: clock() }, issuer);
  const timer = setInterval(() => {
    void (async () => {
      const now = clock();
      const due = await ctx.db.prisma.signingKey.findFirst({ where: { retiredAt: null, signsFrom: { lte: now } }, orderBy: { signsFrom: 'desc' }, select: { kid: true } });
      if (due && due.kid !== current.kid) current = await loadTokenSigner({ ...ctx, now }, issuer);
    })().catch(onError);
  }, refreshMs);
  timer.unref();
  return {
    get kid() {
      return current.kid;
    },
    sign: (claims, times) => current.sign(claims, times),
    signPayload: (payload) => current.signPayload(payload),
    stop: () => clearInterval(timer),
  };
}

/**
 * Publishes a new key at once; it signs from a JWKS cache lifetime later, so every client and CDN honouring the
 * JWKS max-age has it by then (`immediately`: at once, for a compromised key). The old keys stay published so
 * tokens they signed still verify.
 */
export async function rotateSigningKey({ db, secrets, now }: SecretsContext, { immediately = false } = {}): Promise<{ kid: string; signsFrom: Date }> {
  const created = await newKeyRow(secrets);
  const signsFrom = immediately ? now : new Date(now.getTime() + JWKS_MAX_AGE_SECONDS * 1000);
  // Only an INSERT: the app role may not change or delete a signing key (server/src/db/roles.ts). Which key signs
  // follows from signsFrom alone.
  await db.prisma.signingKey.create({ data: { ...created, createdAt: now, signsFrom } });
  return { kid: created.kid, signsFrom };
}

/** The JSON Web Key Set clients use to verify offline tokens (genuine keys only). */
export async function publicJwks(ctx: Pick<ServiceContext, 'db' | 'secrets'>): Promise<{ keys: JWK[] }> {
  return { keys: (await trustedSigningKeys(ctx)).map((row) => row.publicJwk as JWK) };
}

async function newKeyRow(secrets: ServiceContext['secrets']) {
  const { publicKey, privateKey } = await generateKeyPair(TOKEN_ALGORITHM, { crv: 'Ed25519', extractable: true });
  const { kid, publicJwk } = await publishedKey(publicKey);
  return { kid, algorithm: TOKEN_ALGORITHM, publicJwk, privateKeyEncrypted: secrets.encrypt(await exportPKCS8(privateKey)) };
}

/** A public key as the JWKS publishes it: its kid is the key's RFC 7638 thumbprint. */
export async function publishedKey(publicKey: KeyObject | CryptoKey): Promise<{ kid: string; publicJwk: JWK }> {
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, publicJwk: { ...jwk, kid, alg: TOKEN_ALGORITHM, use: 'sig' } };
}
