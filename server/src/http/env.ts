import type { AppError } from '../domain/errors.js';
import type { Actor } from '../services/auth/actor.js';

/** Hono context variables set by our middleware. */
export interface AppEnv {
  Variables: {
    requestId: string;
    clientIp: string;
    actor: Actor | null;
    /** The error this request was answered with (errorResponse), for the metrics. */
    appError?: AppError;
  };
}
