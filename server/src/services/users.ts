import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { diffChanges, recordAudit, type AuditActor } from './audit/audit-log.js';
import { emitEvent } from './webhooks/events.js';
import { auditActor, requireAdmin, requireMember, requireUser } from './auth/actor.js';
import { EmailSchema, PasswordSchema, hashPassword, verifyPassword } from './auth/passwords.js';
import { revokeKeysOwnedBy } from './auth/api-keys.js';
import { requireRecentReauth } from './auth/recent-reauth.js';
import { spendResetLinks } from './auth/reset-tokens.js';
import { revokeSessions, signInNewAccount, type SignedIn } from './auth/sessions.js';
import type { ServiceContext, SystemContext } from './context.js';
import { TenantInputSchema } from './tenants.js';
import { isUuid } from './listing.js';
import { isUniqueViolation, parseInput } from './validation.js';

const RoleSchema = z.enum(['CompanyAdmin', 'ReadOnly']);

/** What the API shows of a user: never the hash, secrets or lockout internals. */
export const PUBLIC_USER_FIELDS = {
  id: true, tenantId: true, email: true, name: true, role: true, deactivatedAt: true, lastLoginAt: true,
  digestEmailEnabled: true, expiryEmailEnabled: true, createdAt: true, updatedAt: true, mfaSecretEncrypted: true,
} as const;

const UserInputSchema = z.object({
  email: EmailSchema,
  name: z.string().trim().min(1).max(200).nullable().optional(),
  role: RoleSchema,
  password: PasswordSchema,
});

/** True while no user exists: the console shows first-run setup. */
export async function needsSetup({ db }: Pick<ServiceContext, 'db'>): Promise<boolean> {
  return (await db.prisma.user.count()) === 0;
}

/**
 * First run: creates the first tenant and its CompanyAdmin. Refused forever once any user exists (an
 * advisory lock makes two simultaneous setups agree).
 */
export async function setup(ctx: ServiceContext, input: { companyName: string; keyPrefix: string; email: string; password: string; name?: string | null }) {
  const tenantData = parseInput(TenantInputSchema, { name: input.companyName, keyPrefix: input.keyPrefix });
  const userData = parseInput(UserInputSchema, { email: input.email, password: input.password, name: input.name, role: 'CompanyAdmin' });
  const passwordHash = await hashPassword(userData.password);
  return ctx.db.prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('keyforge.setup'))`;
    if ((await tx.user.count()) > 0) throw new AppError('Forbidden', 'Setup is already done. Sign in instead.');
    const tenant = await tx.tenant.create({ data: tenantData }).catch((error) => {
      throw isUniqueViolation(error) ? new AppError('Conflict', `The key prefix ${tenantData.keyPrefix} is already used.`) : error;
    });
    const user = await tx.user.create({ data: { tenantId: tenant.id, email: userData.email, name: userData.name, role: 'CompanyAdmin', passwordHash, createdAt: ctx.now } });
    await recordAudit(tx, { tenantId: tenant.id, action: 'CreateUser', entityType: 'User', entityId: user.id, entity: user.email, details: { role: user.role, via: 'setup' } }, { id: user.id, label: user.email, ip: ctx.meta.ip }, ctx.now);
    return { tenant, userId: user.id };
  });
}

/** First-run setup, then the new CompanyAdmin's first session. */
export async function setupAndSignIn(ctx: ServiceContext, input: Parameters<typeof setup>[1]): Promise<SignedIn> {
  await setup(ctx, input);
  return signInNewAccount(ctx, input.email, input.password);
}

/**
 * What the API shows of a user whose id the server itself holds: the one a session was just issued to, or a member
 * the caller was already authorized for. Not for ids from a client (those go through findTenantUser's tenant scope).
 */
export const publicUser = (ctx: Pick<ServiceContext, 'db'>, userId: string) => ctx.db.prisma.user.findUniqueOrThrow({ where: { id: userId }, select: PUBLIC_USER_FIELDS });

/** The signed-in user (`me`). */
export async function getOwnUser(ctx: ServiceContext) {
  return publicUser(ctx, requireUser(ctx).userId);
}

/**
 * Creates a user with a chosen password: the operator's tool (`pnpm cli user:create`, the system actor). A company's
 * admins add members by invitation instead (invitations.ts): an account for an address is made only by whoever reads
 * its mailbox, so no company can squat an address that belongs to someone else, nor learn from the answer which
 * addresses have an account with another company.
 */
export async function createUser(ctx: ServiceContext, input: z.input<typeof UserInputSchema>) {
  const actor = requireAdmin(ctx);
  if (actor.kind !== 'system') throw new AppError('Forbidden', 'Members join by invitation: invite them by email (inviteUser).');
  const { tenantId } = actor;
  const data = parseInput(UserInputSchema, input);
  const passwordHash = await hashPassword(data.password);
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const user = await tx.user.create({ data: { tenantId, email: data.email, name: data.name, role: data.role, passwordHash, createdAt: ctx.now }, select: PUBLIC_USER_FIELDS });
      await recordAudit(tx, { tenantId, action: 'CreateUser', entityType: 'User', entityId: user.id, entity: user.email, details: { role: user.role, name: user.name } }, auditActor(ctx), ctx.now);
      await emitEvent(tx, tenantId, 'user.created', userData(user), ctx.now);
      return user;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', `A user with the email ${data.email} already exists.`);
    throw error;
  }
}

/** A user of the given company by id; another company's (or a malformed id) is "not found". */
export async function findTenantUser(ctx: Pick<ServiceContext, 'db'>, tenantId: string, userId: string) {
  const user = isUuid(userId) ? await ctx.db.prisma.user.findFirst({ where: { id: userId, tenantId } }) : null;
  if (!user) throw new AppError('NotFound', 'User not found.');
  return user;
}

export async function listUsers(ctx: ServiceContext) {
  return ctx.db.prisma.user.findMany({ where: { tenantId: requireMember(ctx) }, orderBy: { createdAt: 'asc' }, select: PUBLIC_USER_FIELDS });
}

/** Changes a team member's name or role. An admin cannot demote themself (a tenant must keep an admin). */
export async function updateUser(ctx: ServiceContext, userId: string, input: { name?: string | null; role?: 'CompanyAdmin' | 'ReadOnly' }) {
  const admin = requireAdmin(ctx);
  const data = parseInput(z.object({ name: z.string().trim().min(1).max(200).nullable().optional(), role: RoleSchema.optional() }), input);
  const user = await findTenantUser(ctx, admin.tenantId, userId);
  // Making someone an admin hands them the company's account security.
  if (data.role === 'CompanyAdmin' && user.role !== 'CompanyAdmin') await requireRecentReauth(ctx);
  if (admin.kind === 'user' && admin.userId === userId && data.role === 'ReadOnly') throw new AppError('Conflict', 'You cannot remove your own admin role; ask another admin.');
  return ctx.db.prisma.$transaction(async (tx) => {
    // The row first, as deactivateUser takes it: the same edit sent twice at once waits here, then is measured
    // against what the first one stored, and is logged (and emitted) once.
    // FOR NO KEY UPDATE: the lock the update takes anyway; rows inserted that reference this one do not wait for it.
    await tx.$executeRaw`SELECT 1 FROM users WHERE id = ${user.id}::uuid FOR NO KEY UPDATE`;
    const stored = await tx.user.findUniqueOrThrow({ where: { id: user.id }, select: { name: true, role: true } });
    const changes = diffChanges(stored, data);
    // An edit that changes nothing writes nothing (and logs and emits nothing).
    if (!changes) return tx.user.findUniqueOrThrow({ where: { id: user.id }, select: PUBLIC_USER_FIELDS });
    const updated = await tx.user.update({ where: { id: user.id }, data, select: PUBLIC_USER_FIELDS });
    await recordAudit(tx, { tenantId: user.tenantId, action: 'UpdateUser', entityType: 'User', entityId: user.id, entity: user.email, details: changes }, auditActor(ctx), ctx.now);
    await emitEvent(tx, user.tenantId, 'user.updated', { ...userData(updated), changes }, ctx.now);
    return updated;
  });
}

/** Deactivated users cannot sign in; their sessions end and every API key they own (directly or derived) is revoked. */
export async function deactivateUser(ctx: ServiceContext, userId: string) {
  const admin = requireAdmin(ctx);
  const user = await findTenantUser(ctx, admin.tenantId, userId);
  if (admin.kind === 'user' && admin.userId === userId) throw new AppError('Conflict', 'You cannot deactivate yourself.');
  if (user.deactivatedAt) return ctx.db.prisma.user.findUniqueOrThrow({ where: { id: user.id }, select: PUBLIC_USER_FIELDS });
  return ctx.db.prisma.$transaction(async (tx) => {
    // Only while active: a deactivation racing this one (a double click) waits on the row, then changes, logs and emits nothing.
    const { count } = await tx.user.updateMany({ where: { id: user.id, tenantId: user.tenantId, deactivatedAt: null }, data: { deactivatedAt: ctx.now } });
    const updated = await tx.user.findUniqueOrThrow({ where: { id: user.id }, select: PUBLIC_USER_FIELDS });
    if (!count) return updated;
    await revokeSessions(tx, user.id, ctx.now);
    const keysRevoked = await revokeKeysOwnedBy(tx, user.id, ctx.now);
    await emitEvent(tx, user.tenantId, 'user.removed', { ...userData(updated), apiKeysRevoked: keysRevoked }, ctx.now);
    await recordAudit(tx, { tenantId: user.tenantId, action: 'DeactivateUser', entityType: 'User', entityId: user.id, entity: user.email, details: keysRevoked ? { apiKeysRevoked: keysRevoked } : undefined }, auditActor(ctx), ctx.now);
    return updated;
  });
}

/** Lets a deactivated team member sign in again; their old sessions and API keys stay revoked. */
export async function reactivateUser(ctx: ServiceContext, userId: string) {
  const admin = requireAdmin(ctx);
  const user = await findTenantUser(ctx, admin.tenantId, userId);
  await reactivate(ctx, user, auditActor(ctx));
  return ctx.db.prisma.user.findUniqueOrThrow({ where: { id: user.id }, select: PUBLIC_USER_FIELDS });
}

/** Clears `deactivatedAt` and logs it; false when the user was not deactivated (nothing logged). */
export async function reactivate(ctx: SystemContext, user: { id: string; tenantId: string; email: string }, by: AuditActor): Promise<boolean> {
  return ctx.db.prisma.$transaction(async (tx) => {
    const { count } = await tx.user.updateMany({ where: { id: user.id, deactivatedAt: { not: null } }, data: { deactivatedAt: null } });
    if (count === 1) await recordAudit(tx, { tenantId: user.tenantId, action: 'ReactivateUser', entityType: 'User', entityId: user.id, entity: user.email }, by, ctx.now);
    return count === 1;
  });
}

/** Needs the current password; ends the user's other sessions. */
export async function changePassword(ctx: ServiceContext, input: { currentPassword: string; newPassword: string }) {
  const me = requireUser(ctx);
  await requireRecentReauth(ctx);
  const newPassword = parseInput(z.object({ newPassword: PasswordSchema }), input).newPassword;
  const user = await ctx.db.prisma.user.findUniqueOrThrow({ where: { id: me.userId } });
  if (!(await verifyPassword(user.passwordHash, input.currentPassword))) {
    throw new AppError('InvalidRequest', 'The current password is wrong.', { fields: { currentPassword: 'wrong password' } });
  }
  const passwordHash = await hashPassword(newPassword);
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: user.id }, data: { passwordHash, passwordChangedAt: ctx.now } });
    await spendResetLinks(tx, user.id, ctx.now);
    await revokeSessions(tx, user.id, ctx.now, me.sessionFamilyId);
    await recordAudit(tx, { tenantId: user.tenantId, action: 'ChangePassword', entityType: 'User', entityId: user.id, entity: user.email }, auditActor(ctx), ctx.now);
  });
}

export const NotificationPreferencesSchema = z.object({ digestEmailEnabled: z.boolean().optional(), expiryEmailEnabled: z.boolean().optional() }).strict();
export type NotificationPreferences = { digestEmailEnabled: boolean; expiryEmailEnabled: boolean };

export async function getNotificationPreferences(ctx: ServiceContext): Promise<NotificationPreferences> {
  const me = requireUser(ctx);
  return ctx.db.prisma.user.findUniqueOrThrow({ where: { id: me.userId }, select: { digestEmailEnabled: true, expiryEmailEnabled: true } });
}

/** Changes only the caller's own preferences (docs/integrate/management-api.md "Notification preferences (REST)"); returns what is stored. */
export async function updateNotificationPreferences(ctx: ServiceContext, input: unknown): Promise<NotificationPreferences> {
  const me = requireUser(ctx);
  const data = parseInput(NotificationPreferencesSchema, input);
  return ctx.db.prisma.user.update({ where: { id: me.userId }, data, select: { digestEmailEnabled: true, expiryEmailEnabled: true } });
}

/** A user in a webhook payload: the GraphQL/REST field names, never a credential. */
export const userData = (user: { id: string; email: string; name: string | null; role: string }) => ({ userId: user.id, email: user.email, name: user.name, role: user.role });
