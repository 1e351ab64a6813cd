import type { Context, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import proxyaddr from 'proxy-addr';
import type { AppEnv } from '../env.js';

/** Which peers may set X-Forwarded-For: nobody, the first n hops, or a set of addresses/CIDR ranges. */
export type TrustProxy = false | { hops: number } | { addresses: string[] };

/** `true` means a proxy on this host or a private network (loopback, link-local and private ranges). */
export const TRUSTED_WHEN_TRUE = ['loopback', 'linklocal', 'uniquelocal'];

/** Parses TRUST_PROXY: false | true | a hop count | a comma-separated list of addresses and CIDR ranges. */
export function parseTrustProxy(value: string | undefined): TrustProxy {
  const text = (value ?? '').trim().toLowerCase();
  if (text === '' || text === 'false' || text === 'no' || text === '0') return false;
  if (text === 'true' || text === 'yes') return { addresses: TRUSTED_WHEN_TRUE };
  if (/^\d+$/.test(text)) return { hops: Number(text) };
  const addresses = text.split(',').map((part) => part.trim()).filter(Boolean);
  proxyaddr.compile(addresses); // throws on anything that is not an address, a CIDR range or a known name
  return { addresses };
}

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
