import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../deps.js';
import { AppError } from '../domain/errors.js';
import { createPortalGraphQLHandler } from '../graphql/handler.js';
import { portalCompany } from '../services/portal/sign-in.js';
import type { AppEnv } from './env.js';
import { rateLimitedGraphQL } from './graphql-route.js';
import { bodySizeLimit } from './middleware/body-size.js';
import { contentSecurityPolicy, logoImageOrigin } from './content-security-policy.js';
import { errorResponse } from './errors.js';
import { bodyTooLarge } from './middleware/errors.js';
import { requestLogScope } from './middleware/logging.js';

export const MAX_PORTAL_BODY_BYTES = 16 * 1024;
const NO_PORTAL = 'There is no customer portal at this address.';

/**
 * The customer portal (docs/guide/customer-portal.md): its GraphQL endpoint `/portal/<handle>/graphql` for the
 * company with that handle, and, when the console is built, its page (`portal.html` of the console's build) for
 * every other `/portal/<handle>/…` GET, under a Content-Security-Policy that admits the company's logo. An unknown
 * handle and a portal switched off answer the same 404 (the page then says there is no portal at this address).
 */
export function mountPortal(app: Hono<AppEnv>, deps: AppDeps, consoleDir?: string): void {
  const graphql = createPortalGraphQLHandler(deps);
  app.use('/portal/:handle/graphql', requestLogScope(), bodySizeLimit(MAX_PORTAL_BODY_BYTES, bodyTooLarge('The request body is too large.')));
  app.on(['GET', 'POST'], '/portal/:handle/graphql', async (c) => {
    const company = await portalCompany(deps, c.req.param('handle'));
    if (!company) return errorResponse(c, new AppError('NotFound', NO_PORTAL));
    const response = await graphql.fetch(c.req.raw, { company, meta: { ip: c.get('clientIp'), userAgent: c.req.header('user-agent') ?? null }, requestId: c.get('requestId') });
    const limited = await rateLimitedGraphQL(response);
    if (!limited) return response;
    const headers = new Headers(response.headers);
    headers.set('retry-after', String(limited.retryAfterSeconds));
    return new Response(limited.body, { status: 429, headers });
  });

  const pageFile = consoleDir && path.join(consoleDir, 'portal.html');
  if (!pageFile || !existsSync(pageFile)) return;
  const page = readFileSync(pageFile, 'utf8');
  const servePage = async (c: Context<AppEnv>) => {
    const company = await portalCompany(deps, c.req.param('handle') ?? '');
    c.header('Cache-Control', 'no-cache');
    // Images from the server and from the origin of this company's logo only.
    const logoOrigin = logoImageOrigin(company?.logoUrl ?? null);
    c.header('Content-Security-Policy', contentSecurityPolicy(logoOrigin ? [logoOrigin] : []));
    return c.html(page, company ? 200 : 404);
  };
  app.get('/portal/:handle', servePage);
  app.get('/portal/:handle/*', servePage);
}
