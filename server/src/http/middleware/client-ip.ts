import type { MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import proxyaddr from 'proxy-addr';
import type { AppEnv } from '../env.js';
import type { TrustProxy } from '../../config.js';

/** The caller's address from the socket's peer address and the request's X-Forwarded-For header. */
export type ClientIpResolver = (peer: string | undefined, forwardedFor: string | undefined) => string;

/**
 * The caller's address. X-Forwarded-For is written by the client, so it is read from the right: each hop
 * is accepted only while the peer that appended it is a trusted proxy; the first untrusted address wins.
 * A request without a socket (app.fetch in-process) counts as coming from loopback.
 */
export function clientIpResolver(trust: TrustProxy): ClientIpResolver {
  if (trust === false) return (peer) => peer ?? '127.0.0.1';
  const isTrusted = 'hops' in trust ? (_addr: string, i: number) => i < trust.hops : proxyaddr.compile(trust.addresses);
  return (peer, forwardedFor) => {
    const remoteAddress = peer ?? '127.0.0.1';
    if (!forwardedFor) return remoteAddress;
    try {
      return proxyaddr({ connection: { remoteAddress }, headers: { 'x-forwarded-for': forwardedFor } } as never, isTrusted);
    } catch {
      return remoteAddress; // a malformed header: fall back to the peer
    }
  };
}

/** Sets `clientIp` (and a null `actor`, until management auth runs) on every request of the Hono app. */
export function clientIpMiddleware(trust: TrustProxy): MiddlewareHandler<AppEnv> {
  const clientIp = clientIpResolver(trust);
  return async (c, next) => {
    let peer: string | undefined;
    try {
      peer = getConnInfo(c).remote.address;
    } catch {
      peer = undefined;
    }
    c.set('clientIp', clientIp(peer, c.req.header('x-forwarded-for')));
    c.set('actor', null);
    await next();
  };
}
