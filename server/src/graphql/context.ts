import type { CookieStore } from '@whatwg-node/cookie-store';
import type { AppDeps } from '../deps.js';
import type { Actor, RequestMeta } from '../services/auth/actor.js';
import type { ServiceContext } from '../services/context.js';

/** Per-request GraphQL context. `cookies`: the request's cookies; what is set there becomes a Set-Cookie of the response. */
export interface GraphQLContext {
  deps: AppDeps;
  actor: Actor | null;
  meta: RequestMeta;
  now: Date;
  requestId: string;
  cookies: CookieStore;
}

/** The service context of this request: its dependencies, time, caller and request meta (services authorize the caller). */
export const serviceCtx = (ctx: GraphQLContext): ServiceContext => ({ db: ctx.deps.db, secrets: ctx.deps.secrets, now: ctx.now, actor: ctx.actor, meta: ctx.meta });
