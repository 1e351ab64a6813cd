import type { AppDeps } from '../http/deps.js';
import type { Actor, RequestMeta } from '../services/auth/actor.js';

/** Per-request GraphQL context. `cookies` collects Set-Cookie values the transport adds to the response. */
export interface GraphQLContext {
  deps: AppDeps;
  actor: Actor | null;
  meta: RequestMeta;
  now: Date;
  requestId: string;
  refreshCookie: string | null;
  cookies: string[];
}

/** The service context of a management call. */
export const serviceCtx = (ctx: GraphQLContext) => ({ db: ctx.deps.db, secrets: ctx.deps.secrets, now: ctx.now });
