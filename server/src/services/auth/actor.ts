import { AppError } from '../../domain/errors.js';
import type { AuditActor } from '../audit/audit-log.js';

export type Role = 'CompanyAdmin' | 'ReadOnly';

/** The authenticated caller of the management API. */
export type Actor =
  | { kind: 'user'; userId: string; tenantId: string; role: Role; email: string; sessionFamilyId: string | null }
  | { kind: 'apiKey'; apiKeyId: string; tenantId: string; role: Role; label: string };

/**
 * The server itself or its operator (jobs, the CLI, seeding): an admin of `tenantId`, or of no tenant at all
 * (null: only operator-wide calls such as recovery or finding a license by its key). `label` names it in the log.
 */
export type SystemActor = { kind: 'system'; tenantId: string | null; label: string };

/** Whoever a service acts for. */
export type ServiceActor = Actor | SystemActor;

/** An actor acting within its tenant. */
export type TenantActor = Exclude<ServiceActor, SystemActor> | (SystemActor & { tenantId: string });

/** Management request context: who, from where, when. */
export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export const NO_META: RequestMeta = { ip: null, userAgent: null };

/** The system actor; changes it makes are logged as "system" (or the given label, e.g. "system (cli)"). */
export const systemActor = (tenantId: string | null, label = 'system'): SystemActor => ({ kind: 'system', tenantId, label });

/** What an authorization check reads (services/context.ts names it with the other contexts). */
export type ActorContext = { actor: ServiceActor | null };

/** Who the activity log names for a change made in this context. */
export function auditActor(ctx: ActorContext & { meta: RequestMeta }): AuditActor {
  const actor = ctx.actor;
  if (!actor) throw new AppError('Unauthorized', 'Sign in, or send an API key in X-Api-Key.');
  if (actor.kind === 'user') return { id: actor.userId, label: actor.email, ip: ctx.meta.ip };
  if (actor.kind === 'apiKey') return { id: actor.apiKeyId, label: actor.label, ip: ctx.meta.ip };
  return { id: null, label: actor.label, ip: ctx.meta.ip };
}

function requireTenantActor(ctx: ActorContext): TenantActor {
  const actor = ctx.actor;
  if (!actor) throw new AppError('Unauthorized', 'Sign in, or send an API key in X-Api-Key.');
  // A system actor without a tenant (operator-wide) must be given one before touching tenant data.
  if (actor.kind === 'system' && actor.tenantId === null) throw new AppError('Forbidden', 'This operation needs a tenant.');
  return actor as TenantActor;
}

/** Reading tenant data needs any member of the tenant (any role); returns the tenant id every query is scoped by. */
export function requireMember(ctx: ActorContext): string {
  return requireTenantActor(ctx).tenantId;
}

/** Changing tenant data needs the CompanyAdmin role (the system actor acts as an admin of its tenant). */
export function requireAdmin(ctx: ActorContext): TenantActor {
  const actor = requireTenantActor(ctx);
  if (actor.kind !== 'system' && actor.role !== 'CompanyAdmin') throw new AppError('Forbidden', 'This needs the CompanyAdmin role; your role is read-only.');
  return actor;
}

/** Self-service operations (own password, MFA, preferences) need a signed-in user, not an API key. */
export function requireUser(ctx: ActorContext): Extract<Actor, { kind: 'user' }> {
  const actor = requireTenantActor(ctx);
  if (actor.kind !== 'user') throw new AppError('Forbidden', 'This operation needs a signed-in user, not an API key.');
  return actor;
}

/** The operator's context acting within one tenant (found by its prefix, or as the tenant of a license key). */
export function operatorIn<C extends ActorContext>(ctx: C, tenantId: string): C {
  return { ...ctx, actor: systemActor(tenantId, requireOperator(ctx).label) };
}

/** Operator-wide calls (recovery, a license by its key across tenants) are for the system actor only (the CLI). */
export function requireOperator(ctx: ActorContext): SystemActor {
  const actor = ctx.actor;
  if (actor?.kind !== 'system') throw new AppError('Forbidden', 'This operation is for the server operator only.');
  return actor;
}

/**
 * Whether the caller operates the whole installation (docs/operate/observability.md): the system actor without a tenant,
 * or a signed-in CompanyAdmin (a session, not an API key) whose email OPERATOR_EMAILS lists. Emails are unique
 * across the installation and stored lower-case, as the list is read.
 */
export function isInstallationOperator(actor: ServiceActor | null, operatorEmails: readonly string[]): boolean {
  if (actor?.kind === 'system') return actor.tenantId === null;
  return actor?.kind === 'user' && actor.role === 'CompanyAdmin' && operatorEmails.includes(actor.email.toLowerCase());
}

/** Installation-wide readings (the operator's System page) are for installation operators only. */
export function requireInstallationOperator(ctx: ActorContext, operatorEmails: readonly string[]): void {
  if (!ctx.actor) throw new AppError('Unauthorized', 'Sign in, or send an API key in X-Api-Key.');
  if (!isInstallationOperator(ctx.actor, operatorEmails)) {
    throw new AppError('Forbidden', 'This is for installation operators: a signed-in CompanyAdmin whose email OPERATOR_EMAILS lists.');
  }
}
