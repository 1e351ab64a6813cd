import type { RequestIdVariables } from 'hono/request-id';
import type { Actor } from '../services/auth/actor.js';

/** Hono context variables set by our middleware. */
export interface AppEnv {
  Variables: RequestIdVariables & { clientIp: string; actor: Actor | null };
}
