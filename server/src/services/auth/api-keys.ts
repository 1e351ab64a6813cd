import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import type { ServiceContext } from '../context.js';
import { isUuid } from '../listing.js';
import { parseInput } from '../validation.js';
import { auditActor, requireActor, requireAdmin, type Actor, type RequestMeta } from './actor.js';

type Ctx = Pick<ServiceContext, 'db' | 'secrets' | 'now'>;

export const API_KEY_FIELDS = { id: true, name: true, role: true, hint: true, createdAt: true, lastUsedAt: true, revokedAt: true, createdById: true } as const;

/** Creates a management API key; the plaintext (`kf_…`) is returned once and stored only as a digest. */
export async function createApiKey(ctx: Ctx, actor: Actor | null, input: { name: string; role: 'CompanyAdmin' | 'ReadOnly' }, meta: RequestMeta) {
  const admin = requireAdmin(actor);
  const data = parseInput(z.object({ name: z.string().trim().min(1).max(100), role: z.enum(['CompanyAdmin', 'ReadOnly']) }), input);
  const key = `kf_${randomBytes(24).toString('base64url')}`;
  const apiKey = await ctx.db.prisma.$transaction(async (tx) => {
    const created = await tx.apiKey.create({
      data: {
        tenantId: admin.tenantId,
        name: data.name,
        role: data.role,
        digest: ctx.secrets.digest(`apikey:${key}`),
        hint: `kf_…${key.slice(-4)}`,
        createdById: admin.kind === 'user' ? admin.userId : null,
        createdAt: ctx.now,
      },
      select: API_KEY_FIELDS,
    });
    await recordAudit(tx, { tenantId: admin.tenantId, action: 'CreateApiKey', entityType: 'ApiKey', entityId: created.id, entity: `${created.name} (${created.hint})`, details: { role: created.role } }, auditActor(admin, meta), ctx.now);
    return created;
  });
  return { key, apiKey };
}

export async function listApiKeys(ctx: Ctx, actor: Actor | null) {
  return ctx.db.prisma.apiKey.findMany({ where: { tenantId: requireActor(actor).tenantId }, orderBy: { createdAt: 'desc' }, select: API_KEY_FIELDS });
}

export async function revokeApiKey(ctx: Ctx, actor: Actor | null, id: string, meta: RequestMeta) {
  const admin = requireAdmin(actor);
  const key = isUuid(id) ? await ctx.db.prisma.apiKey.findFirst({ where: { id, tenantId: admin.tenantId } }) : null;
  if (!key) throw new AppError('NotFound', 'API key not found.');
  if (key.revokedAt) return ctx.db.prisma.apiKey.findUniqueOrThrow({ where: { id }, select: API_KEY_FIELDS });
  return ctx.db.prisma.$transaction(async (tx) => {
    const revoked = await tx.apiKey.update({ where: { id }, data: { revokedAt: ctx.now }, select: API_KEY_FIELDS });
    await recordAudit(tx, { tenantId: key.tenantId, action: 'RevokeApiKey', entityType: 'ApiKey', entityId: key.id, entity: `${key.name} (${key.hint})` }, auditActor(admin, meta), ctx.now);
    return revoked;
  });
}
