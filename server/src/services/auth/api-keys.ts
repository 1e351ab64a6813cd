import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Prisma } from '../../generated/prisma/client.js';
import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import { emitEvent } from '../webhooks/events.js';
import type { ServiceContext } from '../context.js';
import { isUuid } from '../listing.js';
import { parseInput } from '../validation.js';
import { auditActor, requireAdmin, requireMember } from './actor.js';
import { requireRecentReauth } from './recent-reauth.js';


export const API_KEY_FIELDS = { id: true, name: true, role: true, hint: true, createdAt: true, lastUsedAt: true, revokedAt: true, createdById: true } as const;

/**
 * Creates a management API key; the plaintext (`kf_…`) is returned once and stored only as a digest.
 * Every key traces to a human: a key created with another key inherits that key's owner and records it as
 * its parent, so deactivating the owner or revoking the parent disables it.
 */
export async function createApiKey(ctx: ServiceContext, input: { name: string; role: 'CompanyAdmin' | 'ReadOnly' }) {
  const admin = requireAdmin(ctx);
  const data = parseInput(z.object({ name: z.string().trim().min(1).max(100), role: z.enum(['CompanyAdmin', 'ReadOnly']) }), input);
  if (admin.kind === 'apiKey') {
    // A key mints keys of its own role or below (automation rotating its credentials), never above it.
    if (data.role === 'CompanyAdmin' && admin.role !== 'CompanyAdmin') throw new AppError('Forbidden', 'An API key cannot create a key with a role above its own.');
  } else await requireRecentReauth(ctx);
  const key = `kf_${randomBytes(24).toString('base64url')}`;
  const apiKey = await ctx.db.prisma.$transaction(async (tx) => {
    let ownerId: string | null = admin.kind === 'user' ? admin.userId : null;
    if (admin.kind === 'apiKey') {
      // Locks the parent so a concurrent revocation cannot miss the new child.
      const [parent] = await tx.$queryRaw<{ created_by_id: string | null }[]>`
        SELECT created_by_id FROM api_keys WHERE id = ${admin.apiKeyId}::uuid AND revoked_at IS NULL FOR UPDATE`;
      ownerId = parent?.created_by_id ?? null;
    }
    if (!ownerId) throw new AppError('Forbidden', 'This API key has no owner who could be held responsible; create keys while signed in.');
    const created = await tx.apiKey.create({
      data: {
        tenantId: admin.tenantId,
        name: data.name,
        role: data.role,
        digest: ctx.secrets.digest(`apikey:${key}`),
        hint: `kf_…${key.slice(-4)}`,
        createdById: ownerId,
        parentKeyId: admin.kind === 'apiKey' ? admin.apiKeyId : null,
        createdAt: ctx.now,
      },
      select: API_KEY_FIELDS,
    });
    await emitEvent(tx, admin.tenantId, 'api_key.created', apiKeyData(created), ctx.now);
    await recordAudit(tx, { tenantId: admin.tenantId, action: 'CreateApiKey', entityType: 'ApiKey', entityId: created.id, entity: `${created.name} (${created.hint})`, details: { role: created.role } }, auditActor(ctx), ctx.now);
    return created;
  });
  return { key, apiKey };
}

export async function listApiKeys(ctx: ServiceContext) {
  return ctx.db.prisma.apiKey.findMany({ where: { tenantId: requireMember(ctx) }, orderBy: { createdAt: 'desc' }, select: API_KEY_FIELDS });
}

export async function revokeApiKey(ctx: ServiceContext, id: string) {
  const admin = requireAdmin(ctx);
  const key = isUuid(id) ? await ctx.db.prisma.apiKey.findFirst({ where: { id, tenantId: admin.tenantId } }) : null;
  if (!key) throw new AppError('NotFound', 'API key not found.');
  if (key.revokedAt) return ctx.db.prisma.apiKey.findUniqueOrThrow({ where: { id }, select: API_KEY_FIELDS });
  return ctx.db.prisma.$transaction(async (tx) => {
    // Only while live: a revocation racing this one (a double click) waits on the row, then changes, logs and emits nothing.
    const { count } = await tx.apiKey.updateMany({ where: { id, tenantId: key.tenantId, revokedAt: null }, data: { revokedAt: ctx.now } });
    const revoked = await tx.apiKey.findUniqueOrThrow({ where: { id }, select: API_KEY_FIELDS });
    if (!count) return revoked;
    const derived = await revokeDerivedKeys(tx, [key.id], ctx.now);
    await emitEvent(tx, key.tenantId, 'api_key.removed', { ...apiKeyData(revoked), derivedKeysRevoked: derived.length }, ctx.now);
    await recordAudit(tx, { tenantId: key.tenantId, action: 'RevokeApiKey', entityType: 'ApiKey', entityId: key.id, entity: `${key.name} (${key.hint})`, details: derived.length ? { derivedKeysRevoked: derived.length } : undefined }, auditActor(ctx), ctx.now);
    return revoked;
  });
}

/** Revokes every live key created, directly or through other keys, by the given keys; returns their ids. */
export async function revokeDerivedKeys(tx: Prisma.TransactionClient, parentIds: string[], now: Date): Promise<string[]> {
  if (parentIds.length === 0) return [];
  const rows = await tx.$queryRaw<{ id: string }[]>`
    WITH RECURSIVE derived AS (
      SELECT id FROM api_keys WHERE parent_key_id = ANY(${parentIds}::uuid[])
      UNION
      SELECT k.id FROM api_keys k JOIN derived d ON k.parent_key_id = d.id
    )
    UPDATE api_keys SET revoked_at = ${now} WHERE id IN (SELECT id FROM derived) AND revoked_at IS NULL RETURNING id`;
  return rows.map((row) => row.id);
}

/** Revokes every live key a user owns (created by them or derived from their keys). */
export async function revokeKeysOwnedBy(tx: Prisma.TransactionClient, userId: string, now: Date): Promise<number> {
  const { count } = await tx.apiKey.updateMany({ where: { createdById: userId, revokedAt: null }, data: { revokedAt: now } });
  return count;
}

/** An API key in a webhook payload: its name, hint and role, never the key. */
const apiKeyData = (key: { id: string; name: string; hint: string; role: string }) => ({ apiKeyId: key.id, name: key.name, hint: key.hint, role: key.role });
