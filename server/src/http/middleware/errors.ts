import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics/index.js';
import type { AppEnv } from '../env.js';
import { errorResponse, httpErrorToAppError } from '../errors.js';
import { maskCredentials } from './credentials-in-url.js';

/** An unknown route: the API's NotFound error body (the path masked like in logs). */
export const notFound: NotFoundHandler<AppEnv> = (c) => errorResponse(c, new AppError('NotFound', `No route for ${c.req.method} ${maskCredentials(c.req.path)}.`));

/** Anything thrown: a client-safe `{ error: { code, message, requestId } }`, never a stack trace. */
export function onError(logger: Logger, metrics?: Metrics): ErrorHandler<AppEnv> {
  return (error, c: Context<AppEnv>) => {
    metrics?.databaseError(error);
    return errorResponse(c, httpErrorToAppError(error, logger, c.get('requestId')));
  };
}

/** A body over `maxBytes` is an InvalidRequest, for bodySizeLimit. */
export const bodyTooLarge = (message: string) => (c: Context) => errorResponse(c as Context<AppEnv>, new AppError('InvalidRequest', message));
