import { AsyncLocalStorage } from 'node:async_hooks';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { createComplexityRule } from '@pothos/plugin-complexity';
import { GraphQLError, Kind, NoSchemaIntrospectionCustomRule, validate, visit, type DocumentNode } from 'graphql';
import { createYoga, type Plugin, type YogaInitialContext } from 'graphql-yoga';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { useCookies } from '@whatwg-node/server-plugin-cookies';
import { AppError, toAppError } from '../domain/errors.js';
import type { AppDeps } from '../deps.js';
import { unstorableStringError } from '../services/validation.js';
import type { Actor, RequestMeta } from '../services/auth/actor.js';
import { QUERY_COST_BUDGET } from './builder.js';
import { armorOptions, MANAGEMENT_QUERY_LIMITS, PORTAL_QUERY_LIMITS } from './query-limits.js';
import type { GraphQLContext } from './context.js';
import { schema } from './schema/index.js';
import type { PortalGraphQLContext } from './portal/builder.js';
import { portalSchema } from './portal/schema.js';
import { authenticatePortalSession, type PortalCompany } from '../services/portal/sign-in.js';
import { PORTAL_COOKIE } from '../session-cookie.js';

/** A validation message without its "Did you mean …" (which would list the schema's names to an anonymous caller). */
export const withoutSuggestions = (message: string) => message.replace(/ ?Did you mean .*$/s, '');

/** What the HTTP layer hands to each GraphQL request. */
export interface GraphQLServerContext {
  actor: Actor | null;
  meta: RequestMeta;
  requestId: string;
}

/**
 * Only callers who authenticated may introspect the schema, or learn field names from
 * "Did you mean …" suggestions in validation errors.
 */
const introspectionForAuthenticatedOnly: Plugin<GraphQLContext> = {
  onValidate({ context, addValidationRule }) {
    if (context.actor) return;
    addValidationRule(NoSchemaIntrospectionCustomRule);
    return ({ result, setResult }) => {
      if (result.length === 0) return;
      setResult(result.map((error) => (/Did you mean/.test(error.message) ? new GraphQLError(withoutSuggestions(error.message), { nodes: error.nodes, extensions: error.extensions }) : error)));
    };
  },
};

/**
 * Fields that recompute something large cost far more than graphql-armor's flat per-object cost, which cannot price
 * one field: their `complexity` (@pothos/plugin-complexity, graphql/builder.ts) is summed over the operation, fragments
 * and aliases included, and the query is refused at validation above the budget (one such field per query).
 */
// Meta fields (`__typename`, which urql adds to every selection set, and introspection) cost nothing: the plugin
// would price each at 1, so one expensive field plus a client's `__typename`s went over the budget.
const withoutMetaFields = (document: DocumentNode) => visit(document, { Field: (node) => (node.name.value.startsWith('__') ? null : undefined) });

const limitExpensiveFields: Plugin<GraphQLContext> = {
  onValidate({ context, params: { schema, documentAST } }) {
    // Yoga's initial context carries the request's variables and operation name (a cost may depend on them).
    const { params } = context as GraphQLContext & YogaInitialContext;
    // Measured once the standard rules passed: the plugin's rule would otherwise answer an unknown field or a bad
    // variable with errors of its own instead of graphql-js's.
    return ({ result, setResult }) => {
      if (result.length > 0) return;
      const overBudget: GraphQLError[] = [];
      const rule = createComplexityRule({
        context,
        variableValues: params.variables ?? {},
        operationName: params.operationName,
        validate: ({ complexity }) => {
          if (complexity > QUERY_COST_BUDGET) {
            overBudget.push(new GraphQLError(`Query cost limit exceeded: expensive fields cost ${complexity}, the limit is ${QUERY_COST_BUDGET}.`, { extensions: { code: 'InvalidRequest' } }));
          }
        },
      });
      validate(schema, withoutMetaFields(documentAST), [rule]);
      if (overBudget.length > 0) setResult(overBudget);
    };
  },
};

// maskError gets no context: the HTTP layer's request id reaches it through this store.
const currentRequestId = new AsyncLocalStorage<string>();

/** A NUL or lone surrogate in a variable or a string literal is refused before any resolver runs (PostgreSQL cannot store it). */
export const refuseUnstorableStrings: Plugin = {
  onExecute({ args, setResultAndStopExecution }) {
    let error = unstorableStringError(args.variableValues ?? {});
    if (!error) {
      visit(args.document, {
        [Kind.STRING]: (node) => {
          error ??= unstorableStringError({ 'a string literal': node.value });
        },
      });
    }
    if (error) setResultAndStopExecution({ errors: [new GraphQLError(error.message, { extensions: { code: error.code, fields: error.details.fields } })] });
  },
};

/** Client errors keep their code and message; anything unexpected is logged and masked (both GraphQL endpoints). */
export const maskError =
  (deps: AppDeps) =>
  (error: unknown): Error => {
        const original = error instanceof GraphQLError ? error.originalError ?? null : error;
        if (error instanceof GraphQLError && !original) return error;
        // graphql-js wraps a scalar's parse error (a bad variable value) in another GraphQLError: a client mistake.
        if (original instanceof GraphQLError) return new GraphQLError(error instanceof Error ? error.message : original.message, { extensions: { code: 'InvalidRequest' } });
        if (!(original instanceof AppError)) deps.metrics?.databaseError(original);
        const appError = original instanceof AppError ? original : toAppError(original, deps.logger, currentRequestId.getStore() ?? 'unknown');
        if (appError.code === 'RateLimited') deps.metrics?.rateLimited(appError.details.rateLimitName ?? 'other');
        return new GraphQLError(appError.message, {
          extensions: {
            code: appError.code,
            ...(appError.details.fields ? { fields: appError.details.fields } : {}),
            ...(appError.details.retryAfterSeconds !== undefined ? { retryAfterSeconds: appError.details.retryAfterSeconds } : {}),
            // Yoga turns this into the response's status (and strips it from the body): the database is away.
            ...(appError.code === 'ServiceUnavailable' ? { http: { status: 503, headers: { 'Retry-After': String(appError.details.retryAfterSeconds ?? 2) } } } : {}),
          },
          path: error instanceof GraphQLError ? error.path : undefined,
        });
      };

/** Runs a GraphQL request with its request id in scope for maskError. */
export const withRequestId = <T>(requestId: string, run: () => T): T => currentRequestId.run(requestId, run);

export function createGraphQLHandler(deps: AppDeps) {
  const yoga = createYoga<GraphQLServerContext, GraphQLContext>({
    schema,
    graphqlEndpoint: '/api/graphql',
    graphiql: false,
    landingPage: false,
    logging: false,
    cors: false, // handled by the HTTP layer (console origin only)
    context: ({ actor, meta, requestId, request }) => ({ deps, actor, meta, requestId, cookies: request.cookieStore!, now: deps.clock() }),
    maskedErrors: { maskError: maskError(deps) },
    plugins: [
      // request.cookieStore: the session cookie is read and set through it (Set-Cookie on the response).
      useCookies(),
      // Cookie-authenticated mutations (refreshSession, logout) must not be forgeable by a cross-site form:
      // a request is refused unless it is preflighted (a JSON POST) or carries this header.
      useCSRFPrevention({ requestHeaders: ['x-keyforge-csrf'] }),
      introspectionForAuthenticatedOnly,
      refuseUnstorableStrings,
      limitExpensiveFields,
      EnvelopArmorPlugin(armorOptions(MANAGEMENT_QUERY_LIMITS)),
    ],
  });
  return {
    fetch: (request: Request, context: GraphQLServerContext) => withRequestId(context.requestId, () => yoga.fetch(request, context)),
  };
}

// ─── The customer portal's endpoint (graphql/portal): its own schema, cookie and context ───────────────────────

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
      EnvelopArmorPlugin(armorOptions(PORTAL_QUERY_LIMITS)),
    ],
  });
  return {
    fetch: (request: Request, context: PortalServerContext) => withRequestId(context.requestId, () => yoga.fetch(request, context)),
  };
}
