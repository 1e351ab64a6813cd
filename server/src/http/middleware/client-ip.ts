import type { Context, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import proxyaddr from 'proxy-addr';
import type { AppEnv } from '../env.js';
import type { TrustProxy } from '../../config.js';

export type ClientIpResolver = (c: Context) => string;

/**
 * The caller's address. X-Forwarded-For is written by the client, so it is read from the right: each hop
 * is accepted only while the peer that appended it is a trusted proxy; the first untrusted address wins.
 * In-process requests (app.fetch, no socket) count as coming from loopback.
 */
export function clientIpResolver(trust: TrustProxy): ClientIpResolver {
  const peer = (c: Context): string => {
    try {
      return getConnInfo(c).remote.address ?? '127.0.0.1';
    } catch {
      return '127.0.0.1';
    }
  };
  if (trust === false) return (c) => peer(c);
  const isTrusted = 'hops' in trust ? (_addr: string, i: number) => i < trust.hops : proxyaddr.compile(trust.addresses);
  return (c) => {
    const remoteAddress = peer(c);
    const forwarded = c.req.header('x-forwarded-for');
    if (!forwarded) return remoteAddress;
    try {
      return proxyaddr({ connection: { remoteAddress }, headers: { 'x-forwarded-for': forwarded } } as never, isTrusted);
    } catch {
      return remoteAddress; // a malformed header: fall back to the peer
    }
  };
}

/** Sets `clientIp` (and a null `actor`, until management auth runs) on every request. */
export function clientIpMiddleware(trust: TrustProxy): MiddlewareHandler<AppEnv> {
  const clientIp = clientIpResolver(trust);
  return async (c, next) => {
    c.set('clientIp', clientIp(c));
    c.set('actor', null);
    await next();
  };
}
