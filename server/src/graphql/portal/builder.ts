import SchemaBuilder from '@pothos/core';
import type { CookieStore } from '@whatwg-node/cookie-store';
import { DateTimeISOResolver } from 'graphql-scalars';
import type { AppDeps } from '../../deps.js';
import type { RequestMeta } from '../../services/auth/actor.js';
import type { PortalCompany, PortalContext, PortalCustomer } from '../../services/portal/sign-in.js';

/**
 * The customer portal's GraphQL request context: the company of the portal's handle (the URL names it), and the
 * customer its session cookie stands for at that company (null: signed out). No staff actor ever reaches it.
 */
export interface PortalGraphQLContext {
  deps: AppDeps;
  company: PortalCompany;
  customer: PortalCustomer | null;
  meta: RequestMeta;
  now: Date;
  requestId: string;
  cookies: CookieStore;
}

/** The portal services' context of this request. */
export const portalCtx = (ctx: PortalGraphQLContext): PortalContext => ({ db: ctx.deps.db, secrets: ctx.deps.secrets, now: ctx.now, meta: ctx.meta });

/**
 * The portal's own Pothos builder: a schema apart from the management API's (graphql/builder.ts), holding only what a
 * customer may see and do, so no staff type or field can be reached through it. Served at `/portal/<handle>/graphql`.
 */
export const portalBuilder = new SchemaBuilder<{
  Context: PortalGraphQLContext;
  Scalars: { DateTime: { Input: Date; Output: Date } };
  DefaultFieldNullability: false;
  // No plugins. The management builder's plugins declare their options on every builder's type (Pothos merges them
  // globally), so this builder's options are typed without them.
}>({ plugins: [], defaultFieldNullability: false } as never);

portalBuilder.addScalarType('DateTime', DateTimeISOResolver, { description: 'ISO 8601 date-time (UTC).' });
