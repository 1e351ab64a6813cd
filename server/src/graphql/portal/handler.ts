import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { useCookies } from '@whatwg-node/server-plugin-cookies';
import { GraphQLError, NoSchemaIntrospectionCustomRule } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import type { AppDeps } from '../../deps.js';
import type { RequestMeta } from '../../services/auth/actor.js';
import { authenticatePortalSession, type PortalCompany } from '../../services/portal/sign-in.js';
import { PORTAL_COOKIE } from '../../session-cookie.js';
import { maskError, refuseUnstorableStrings, withRequestId, withoutSuggestions } from '../handler.js';
import type { PortalGraphQLContext } from './builder.js';
import { portalSchema } from './schema.js';

/** What the HTTP layer hands to each portal GraphQL request: the company of the URL's handle. */
export interface PortalServerContext {
  company: PortalCompany;
  meta: RequestMeta;
  requestId: string;
}

/** No introspection and no "Did you mean …" for anyone: the portal's client knows its operations. */
const noIntrospection: Plugin<PortalGraphQLContext> = {
  onValidate({ addValidationRule }) {
    addValidationRule(NoSchemaIntrospectionCustomRule);
    return ({ result, setResult }) => {
      if (result.length) setResult(result.map((error) => (/Did you mean/.test(error.message) ? new GraphQLError(withoutSuggestions(error.message), { nodes: error.nodes, extensions: error.extensions }) : error)));
    };
  },
};

/** The customer portal's GraphQL endpoint (`/portal/<handle>/graphql`): its own schema, cookie and context. */
export function createPortalGraphQLHandler(deps: AppDeps) {
  const yoga = createYoga<PortalServerContext, PortalGraphQLContext>({
    schema: portalSchema,
    graphqlEndpoint: '/portal/:handle/graphql',
    graphiql: false,
    landingPage: false,
    logging: false,
    cors: false, // same origin only: the portal is served by this server
    context: async ({ company, meta, requestId, request }) => {
      const now = deps.clock();
      const token = (await request.cookieStore!.get(PORTAL_COOKIE))?.value;
      const customer = await authenticatePortalSession({ db: deps.db, secrets: deps.secrets, now }, company, token);
      return { deps, company, customer, meta, requestId, cookies: request.cookieStore!, now };
    },
    maskedErrors: { maskError: maskError(deps) },
    plugins: [
      useCookies(),
      // The session cookie is SameSite=Strict; a cross-site form is refused besides, as on the management endpoint.
      useCSRFPrevention({ requestHeaders: ['x-keyforge-csrf'] }),
      noIntrospection,
      refuseUnstorableStrings,
      EnvelopArmorPlugin({
        maxDepth: { n: 6 },
        costLimit: { maxCost: 2000 },
        maxAliases: { n: 10 },
        maxDirectives: { n: 10 },
        maxTokens: { n: 1000 },
        blockFieldSuggestion: { enabled: false },
      }),
    ],
  });
  return {
    fetch: (request: Request, context: PortalServerContext) => withRequestId(context.requestId, () => yoga.fetch(request, context)),
  };
}
