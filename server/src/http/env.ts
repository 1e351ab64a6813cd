import type { RequestIdVariables } from 'hono/request-id';

/** Hono context variables set by our middleware. */
export interface AppEnv {
  Variables: RequestIdVariables & { clientIp: string };
}
