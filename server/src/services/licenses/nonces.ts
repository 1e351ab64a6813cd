import { randomBytes } from 'node:crypto';
import { sha256 } from '../../crypto/secrets.js';
import { AppError } from '../../domain/errors.js';
import type { Db } from '../../db/database.js';
import type { SystemContext } from '../context.js';

export const NONCE_TTL_MS = 5 * 60_000;
type Tx = Pick<Db, '$queryRaw'>;

/** A fresh single-use nonce, valid five minutes. Stored (as a digest) in the database, so any replica can consume it. */
export async function issueNonce({ db, now }: SystemContext): Promise<{ nonce: string }> {
  const nonce = randomBytes(24).toString('base64url');
  await db.prisma.nonce.create({ data: { digest: sha256(nonce), expiresAt: new Date(now.getTime() + NONCE_TTL_MS), createdAt: now } });
  return { nonce };
}

export const NONCE_INVALID = 'The nonce is invalid, expired or already used: fetch a new one from GET /api/v1/nonce.';

/** The nonce of an activation, which must have one. */
export function requireNonce(nonce: string | undefined): string {
  if (!nonce) throw new AppError('NonceRequired', 'A nonce is required: fetch one from GET /api/v1/nonce immediately before activating.');
  return nonce;
}

/**
 * Consumes a nonce atomically: exactly one caller can win it, and only before it expires. The rule is the SQL
 * function nonce_consume, which the activation's own statement (activation_register) also uses.
 */
export async function consumeNonce(tx: Tx, nonce: string | undefined, now: Date): Promise<void> {
  const [{ spent }] = await tx.$queryRaw<{ spent: boolean }[]>`SELECT nonce_consume(${sha256(requireNonce(nonce))}, ${now}::timestamptz) AS spent`;
  if (!spent) throw new AppError('NonceInvalid', NONCE_INVALID);
}

/** Deletes nonces that can no longer be used (house-keeping; idempotent, safe on every replica). */
export async function purgeNonces({ db, now }: SystemContext): Promise<number> {
  const { count } = await db.prisma.nonce.deleteMany({ where: { expiresAt: { lt: new Date(now.getTime() - NONCE_TTL_MS) } } });
  return count;
}
