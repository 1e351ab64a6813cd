import { renderTestEmail } from '../../email/test-email.js';
import { requireAdmin, requireUser } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { deliverDueEmails, type MailTransport } from './delivery.js';
import { enqueueEmails, type OutboxEntry, getOutboxEntry } from './outbox.js';

/**
 * "Send test email" (a CompanyAdmin, to their own address only — never a recipient of their choosing): written
 * to the outbox like every email and delivered at once, so the answer shows what the provider said.
 */
export async function sendTestEmail(ctx: ServiceContext & { publicUrl: string; transport: MailTransport }): Promise<OutboxEntry> {
  requireAdmin(ctx);
  const me = requireUser(ctx);
  const [user, tenant] = await Promise.all([
    ctx.db.prisma.user.findUniqueOrThrow({ where: { id: me.userId }, select: { email: true } }),
    ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: me.tenantId }, select: { name: true } }),
  ]);
  const email = await renderTestEmail({ tenantName: tenant.name, to: user.email, now: ctx.now, dashboardUrl: `${ctx.publicUrl}/` });
  const idempotencyKey = `test:${me.userId}:${ctx.now.toISOString()}`;
  await enqueueEmails(ctx.db.prisma, [{ tenantId: me.tenantId, kind: 'test', idempotencyKey, to: user.email, ...email }], ctx.now);
  await deliverDueEmails(ctx, ctx.transport, { maxBatches: 1 });
  return getOutboxEntry(ctx, me.tenantId, idempotencyKey);
}
