import type { RequestIdVariables } from 'hono/request-id';
import type { AppError } from '../domain/errors.js';
import type { Actor } from '../services/auth/actor.js';

/** Hono context variables set by our middleware. */
export interface AppEnv {
  Variables: RequestIdVariables & {
    clientIp: string;
    actor: Actor | null;
    /** The error this request was answered with (errorResponse), for the metrics. */
    appError?: AppError;
    /** A licensing route's answer, for the metrics (a rejection carries its errorCode): see rest/v1 `answered`. */
    licensingResult?: { errorCode?: unknown };
  };
}
