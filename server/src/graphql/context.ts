import type { CookieStore } from '@whatwg-node/cookie-store';
import type { AppDeps } from '../deps.js';
import type { Actor, RequestMeta } from '../services/auth/actor.js';

/** Per-request GraphQL context. `cookies`: the request's cookies; what is set there becomes a Set-Cookie of the response. */
export interface GraphQLContext {
  deps: AppDeps;
  actor: Actor | null;
  meta: RequestMeta;
  now: Date;
  requestId: string;
  cookies: CookieStore;
}

/** The service context of a management call. */
export const serviceCtx = (ctx: GraphQLContext) => ({ db: ctx.deps.db, secrets: ctx.deps.secrets, now: ctx.now });
