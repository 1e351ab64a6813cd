import { lookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The SSRF guard of outbound webhooks: a URL's host is resolved (every address) and refused when any address is
 * loopback, private, link-local, unique-local, multicast, reserved or unspecified (IPv4 and IPv6, IPv4-mapped IPv6
 * included), unless the operator allows private targets (WEBHOOK_ALLOW_PRIVATE=true). The connection then goes to
 * the address that was checked (a `lookup` hook on the request), so DNS rebinding between check and connect cannot
 * redirect it.
 */

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32], ['100::', 64],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

/** True when the address must not be reached (see above). IPv4-mapped/compatible IPv6 is judged as its IPv4. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^(?:0*:)*(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address) ?? /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (mapped) {
    const v4 = mapped.length === 3 ? hexPairToV4(mapped[1], mapped[2]) : mapped[1];
    return blocked.check(v4, 'ipv4');
  }
  return blocked.check(address, 'ipv6');
}

const hexPairToV4 = (high: string, low: string) => {
  const h = parseInt(high, 16);
  const l = parseInt(low, 16);
  return [h >> 8, h & 255, l >> 8, l & 255].join('.');
};

export class ForbiddenTargetError extends Error {
  constructor(readonly host: string, readonly address: string) {
    super(`refused: ${host} resolves to ${address}, an internal address (set WEBHOOK_ALLOW_PRIVATE=true to allow)`);
    this.name = 'ForbiddenTargetError';
  }
}

/** Checks a literal IP host at once; returns the bracket-free host. */
export function checkLiteralHost(hostname: string, allowPrivate: boolean): string {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !allowPrivate && isForbiddenAddress(host)) throw new ForbiddenTargetError(host, host);
  return host;
}

/**
 * A `lookup` for http.request: resolves every address, fails when any is forbidden, and hands the socket the
 * checked address (the connection cannot go anywhere the check did not see).
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { all: true, family: options.family, hints: options.hints }, (error, addresses) => {
      if (error) return callback(error, '', 4);
      const list = addresses as unknown as { address: string; family: number }[];
      const bad = allowPrivate ? undefined : list.find((entry) => isForbiddenAddress(entry.address));
      if (bad) return callback(new ForbiddenTargetError(hostname, bad.address) as NodeJS.ErrnoException, '', 4);
      if (!list.length) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}
