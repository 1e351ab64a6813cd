import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from '../auth/actor.js';
import { requireRecentReauth } from '../auth/recent-reauth.js';
import type { ServiceContext } from '../context.js';
import { CreatedAtIdCursor, isUuid, keyset, createdAtIdWhere, toPage, type PageArgs, cappedCount, countUpTo } from '../listing.js';
import { findTenantPlan } from '../plans.js';
import { isUniqueViolation, parseInput } from '../validation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { PAYMENT_PROVIDERS, PROVIDER_NAMES, type PaymentProvider } from './model.js';

// Payment connections as the vendor manages them: which provider, the signing secret (stored encrypted, never shown
// again: a change needs a recent re-authentication, like a webhook endpoint's), what a refund does, and which of the
// provider's prices is sold as which plan. CompanyAdmin changes; any member reads. Another company's: NotFound.

const NOT_FOUND = () => new AppError('NotFound', 'Payment connection not found.');
const Secret = z.string().trim().min(8).max(500);
const RefundAction = z.enum(['suspend', 'revoke']);

const CreateInput = z.object({
  provider: z.enum(PAYMENT_PROVIDERS),
  name: z.string().trim().min(1).max(200).optional(),
  signingSecret: Secret,
  refundAction: RefundAction.optional(),
});
const UpdateInput = z.object({
  name: z.string().trim().min(1).max(200).optional(),
  signingSecret: Secret.optional(),
  refundAction: RefundAction.optional(),
  enabled: z.boolean().optional(),
});

/** The public path a provider delivers a connection's events to (under the server's public URL). */
export const paymentWebhookPath = (connectionId: string) => `/api/v1/payments/${connectionId}/webhook`;

// The last 4 characters tell secrets apart; for a short one (a vendor may choose it) they would give too much of it away.
const hint = (secret: string) => (secret.length >= 16 ? `…${secret.slice(-4)}` : '… (short secret)');

export async function findTenantConnection(ctx: Pick<ServiceContext, 'db'>, tenantId: string, id: string) {
  const connection = isUuid(id) ? await ctx.db.prisma.paymentConnection.findFirst({ where: { id, tenantId } }) : null;
  if (!connection) throw NOT_FOUND();
  return connection;
}

/** Connects a payment provider (CompanyAdmin, recently re-authenticated). Audited without the secret. */
export async function createPaymentConnection(ctx: ServiceContext, input: z.input<typeof CreateInput>) {
  const { tenantId } = requireAdmin(ctx);
  const data = parseInput(CreateInput, input);
  await requireRecentReauth(ctx, 'tenant');
  const name = data.name ?? PROVIDER_NAMES[data.provider];
  return ctx.db.prisma.$transaction(async (tx) => {
    const created = await tx.paymentConnection.create({
      data: { tenantId, provider: data.provider, name, secretEncrypted: ctx.secrets.encrypt(data.signingSecret), secretHint: hint(data.signingSecret), refundAction: data.refundAction ?? 'suspend', createdAt: ctx.now },
    });
    await recordAudit(tx, { tenantId, action: 'CreatePaymentConnection', entityType: 'PaymentConnection', entityId: created.id, entity: name, details: { provider: data.provider, refundAction: created.refundAction } }, auditActor(ctx), ctx.now);
    return created;
  });
}

/** Changes a connection; a new signing secret needs a recent re-authentication. */
export async function updatePaymentConnection(ctx: ServiceContext, id: string, input: z.input<typeof UpdateInput>) {
  const { tenantId } = requireAdmin(ctx);
  const data = parseInput(UpdateInput, input);
  const connection = await findTenantConnection(ctx, tenantId, id);
  if (data.signingSecret !== undefined) await requireRecentReauth(ctx, 'tenant');
  return ctx.db.prisma.$transaction(async (tx) => {
    // The row first, as deletePaymentConnection takes it: the same edit sent twice at once waits here, then is
    // measured against what the first one stored, and is logged once (a new signing secret is always a change).
    // FOR NO KEY UPDATE: the lock the update takes anyway; rows inserted that reference this one do not wait for it.
    await tx.$executeRaw`SELECT 1 FROM payment_connections WHERE id = ${connection.id}::uuid FOR NO KEY UPDATE`;
    const { signingSecret, ...rest } = data;
    const stored = await tx.paymentConnection.findUniqueOrThrow({ where: { id: connection.id } });
    const changed = Object.fromEntries(Object.entries(rest).filter(([field, value]) => value !== undefined && stored[field as keyof typeof rest] !== value));
    if (!Object.keys(changed).length && signingSecret === undefined) return stored;
    const updated = await tx.paymentConnection.update({
      where: { id: connection.id },
      data: { ...changed, ...(signingSecret !== undefined && { secretEncrypted: ctx.secrets.encrypt(signingSecret), secretHint: hint(signingSecret) }) },
    });
    const details = { ...changed, ...(signingSecret !== undefined && { signingSecret: 'replaced' }) };
    await recordAudit(tx, { tenantId, action: 'UpdatePaymentConnection', entityType: 'PaymentConnection', entityId: connection.id, entity: updated.name, details }, auditActor(ctx), ctx.now);
    return updated;
  });
}

/** Disconnects (recently re-authenticated): its mappings, events and subscription states go; the licenses stay. */
export async function deletePaymentConnection(ctx: ServiceContext, id: string) {
  const { tenantId } = requireAdmin(ctx);
  const connection = await findTenantConnection(ctx, tenantId, id);
  await requireRecentReauth(ctx, 'tenant');
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.paymentConnection.delete({ where: { id: connection.id } });
    await recordAudit(tx, { tenantId, action: 'DeletePaymentConnection', entityType: 'PaymentConnection', entityId: connection.id, entity: connection.name, details: { provider: connection.provider } }, auditActor(ctx), ctx.now);
  });
  return connection;
}

export async function listPaymentConnections(ctx: ServiceContext) {
  const tenantId = requireMember(ctx);
  return ctx.db.prisma.paymentConnection.findMany({ where: { tenantId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
}

const MappingInput = z.object({ priceId: z.string().trim().min(1).max(200), planId: z.string().trim().min(1) });

/** Sells a provider price (Stripe price, Paddle price, Lemon Squeezy variant id) as a plan; mapping it again moves it. */
export async function mapPaymentPrice(ctx: ServiceContext, connectionId: string, input: z.input<typeof MappingInput>) {
  const { tenantId } = requireAdmin(ctx);
  const data = parseInput(MappingInput, input);
  const connection = await findTenantConnection(ctx, tenantId, connectionId);
  const plan = await findTenantPlan(ctx, tenantId, data.planId);
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const mapping = await tx.paymentPriceMapping.upsert({
        where: { connectionId_priceId: { connectionId: connection.id, priceId: data.priceId } },
        create: { tenantId, connectionId: connection.id, priceId: data.priceId, planId: plan.id, createdAt: ctx.now },
        update: { planId: plan.id },
        include: { plan: true },
      });
      await recordAudit(tx, { tenantId, action: 'MapPaymentPrice', entityType: 'PaymentConnection', entityId: connection.id, entity: connection.name, details: { priceId: data.priceId, planId: plan.id, planName: plan.name } }, auditActor(ctx), ctx.now);
      return mapping;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', 'This price was mapped meanwhile; try again.');
    throw error;
  }
}

export async function unmapPaymentPrice(ctx: ServiceContext, mappingId: string) {
  const { tenantId } = requireAdmin(ctx);
  const mapping = isUuid(mappingId) ? await ctx.db.prisma.paymentPriceMapping.findFirst({ where: { id: mappingId, tenantId }, include: { connection: true } }) : null;
  if (!mapping) throw new AppError('NotFound', 'Price mapping not found.');
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.paymentPriceMapping.delete({ where: { id: mapping.id } });
    await recordAudit(tx, { tenantId, action: 'UnmapPaymentPrice', entityType: 'PaymentConnection', entityId: mapping.connectionId, entity: mapping.connection.name, details: { priceId: mapping.priceId } }, auditActor(ctx), ctx.now);
  });
  return mapping;
}

export async function listPaymentPrices(ctx: ServiceContext, connectionId: string) {
  const tenantId = requireMember(ctx);
  const connection = await findTenantConnection(ctx, tenantId, connectionId);
  return ctx.db.prisma.paymentPriceMapping.findMany({ where: { tenantId, connectionId: connection.id }, include: { plan: true }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
}

function receivedAtIdWhere(page: ReturnType<typeof keyset<typeof CreatedAtIdCursor>>) {
  const where = createdAtIdWhere(page) as { createdAt?: object; OR?: { createdAt?: object; id?: object }[] };
  if (!where.createdAt) return {};
  return { receivedAt: where.createdAt, OR: where.OR!.map(({ createdAt, ...rest }) => (createdAt ? { receivedAt: createdAt } : rest)) };
}

/** The events a connection received, newest first, with their outcome. */
export async function listPaymentEvents(ctx: ServiceContext, connectionId: string, pageArgs: PageArgs = {}) {
  const tenantId = requireMember(ctx);
  const connection = await findTenantConnection(ctx, tenantId, connectionId);
  const page = keyset(pageArgs, CreatedAtIdCursor);
  const rows = await ctx.db.prisma.paymentEvent.findMany({
    where: { connectionId: connection.id, ...receivedAtIdWhere(page) },
    orderBy: [{ receivedAt: page.backward ? 'asc' : 'desc' }, { id: page.backward ? 'asc' : 'desc' }],
    take: page.size + 1,
  });
  const count = await cappedCount(countUpTo(ctx.db, Prisma.sql`payment_events`, Prisma.sql`connection_id = ${connection.id}::uuid`));
  return toPage(rows, page, count, (row) => [row.receivedAt.toISOString(), row.id]);
}

export type { PaymentProvider };
