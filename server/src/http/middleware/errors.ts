import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics/index.js';
import type { AppEnv } from '../env.js';
import { errorResponse, graphqlErrorResponse, httpErrorToAppError } from '../errors.js';
import { maskCredentials } from './credentials-in-url.js';

/** An unknown route: the API's NotFound error body (the path masked like in logs). */
export const notFound: NotFoundHandler<AppEnv> = (c) => errorResponse(c, new AppError('NotFound', `No route for ${c.req.method} ${maskCredentials(c.req.path)}.`));

/** Anything thrown: a client-safe `{ error: { code, message, requestId } }`, never a stack trace. */
export function onError(logger: Logger, metrics?: Metrics): ErrorHandler<AppEnv> {
  return (error, c: Context<AppEnv>) => {
    metrics?.databaseError(error);
    const appError = httpErrorToAppError(error, logger, c.get('requestId'));
    // A server-side failure before GraphQL ran (the database away while authenticating) still answers in GraphQL's shape.
    if (c.req.path === '/api/graphql' && appError.status >= 500) return graphqlErrorResponse(c, appError);
    return errorResponse(c, appError);
  };
}

/** A body over `maxBytes` is an InvalidRequest, for bodySizeLimit. */
export const bodyTooLarge = (message: string) => (c: Context) => errorResponse(c as Context<AppEnv>, new AppError('InvalidRequest', message));
