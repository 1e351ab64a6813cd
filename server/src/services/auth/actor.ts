import { AppError } from '../../domain/errors.js';
import type { AuditActor } from '../audit/audit-log.js';

export type Role = 'CompanyAdmin' | 'ReadOnly';

/** The authenticated caller of the management API. */
export type Actor =
  | { kind: 'user'; userId: string; tenantId: string; role: Role; email: string; sessionFamilyId: string | null }
  | { kind: 'apiKey'; apiKeyId: string; tenantId: string; role: Role; label: string };

/** Management request context: who, from where, when. */
export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

export function auditActor(actor: Actor, meta: RequestMeta): AuditActor {
  return actor.kind === 'user'
    ? { id: actor.userId, label: actor.email, ip: meta.ip }
    : { id: actor.apiKeyId, label: actor.label, ip: meta.ip };
}

export function requireActor(actor: Actor | null): Actor {
  if (!actor) throw new AppError('Unauthorized', 'Sign in, or send an API key in X-Api-Key.');
  return actor;
}

/** Mutations of tenant data need the CompanyAdmin role. */
export function requireAdmin(actor: Actor | null): Actor {
  const known = requireActor(actor);
  if (known.role !== 'CompanyAdmin') throw new AppError('Forbidden', 'This needs the CompanyAdmin role; your role is read-only.');
  return known;
}

/** Self-service operations (own password, MFA, preferences) need a signed-in user, not an API key. */
export function requireUser(actor: Actor | null): Extract<Actor, { kind: 'user' }> {
  const known = requireActor(actor);
  if (known.kind !== 'user') throw new AppError('Forbidden', 'This operation needs a signed-in user, not an API key.');
  return known;
}
