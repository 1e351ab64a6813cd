import { lookup } from 'node:dns';
import { lookup as lookupAll } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard of outbound webhooks: a URL's host is resolved (every address) and refused when any address is
 * loopback, private, link-local, unique-local, multicast, reserved or unspecified (IPv4 and IPv6, IPv4-mapped IPv6
 * included; see isForbiddenAddress for IPv6 that embeds IPv4), unless the operator allows private targets (WEBHOOK_ALLOW_PRIVATE=true). The connection then goes to
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
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

/**
 * True when the address must not be reached (see above). An IPv6 address that carries an IPv4 address is also judged
 * by that IPv4 address, in every standard embedding: IPv4-compatible (::/96), IPv4-mapped (::ffff:0:0/96),
 * IPv4-translated (::ffff:0:0:0/96), the NAT64 well-known prefix (64:ff9b::/96), 6to4 (2002::/16) and Teredo
 * (2001::/32, server and de-obfuscated client). The NAT64 local-use prefix 64:ff9b:1::/48 is never globally
 * reachable, so it is refused whatever it embeds. Parsing is ipaddr.js's, so every spelling of an address (compressed,
 * dotted tail, leading zeros, upper case) lands on the same eight groups.
 */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6 || !ipaddr.IPv6.isValid(address)) return true;
  const v6 = ipaddr.IPv6.parse(address);
  if (blocked.check(v6.toNormalizedString(), 'ipv6') || v6.match(nat64LocalUse)) return true;
  return embeddedIPv4(v6).some((v4) => blocked.check(v4, 'ipv4'));
}

const nat64LocalUse: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('64:ff9b:1::'), 48];

/** The IPv4 addresses an IPv6 address carries (none for a native IPv6 address). */
function embeddedIPv4(v6: ipaddr.IPv6): string[] {
  const p = v6.parts;
  const v4 = (high: number, low: number) => [high >> 8, high & 255, low >> 8, low & 255].join('.');
  const zeros = (from: number, to: number) => p.slice(from, to).every((part) => part === 0);
  // ::a.b.c.d (compatible), ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), 64:ff9b::a.b.c.d (NAT64).
  if (zeros(0, 6) || (zeros(0, 5) && p[5] === 0xffff) || (zeros(0, 4) && p[4] === 0xffff && p[5] === 0) || (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6))) {
    return [v4(p[6], p[7])];
  }
  if (p[0] === 0x2002) return [v4(p[1], p[2])]; // 6to4: 2002:AABB:CCDD::/48
  if (p[0] === 0x2001 && p[1] === 0) return [v4(p[2], p[3]), v4(p[6] ^ 0xffff, p[7] ^ 0xffff)]; // Teredo: server, client (inverted)
  return [];
}

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

/** How long the creation-time check waits for DNS (the delivery itself resolves again, with its own timeout). */
const WARNING_LOOKUP_MS = 2_000;

/**
 * Said when an endpoint is created or its URL changed: null, or why deliveries to this URL will be refused (its host
 * is, or now resolves to, an internal address while WEBHOOK_ALLOW_PRIVATE is off). A warning, not a refusal: DNS
 * answers change, and the delivery-time guard above is what protects the network. A host that does not resolve
 * (yet) gets no warning: its deliveries fail visibly in the log.
 */
export async function privateTargetWarning(url: string, allowPrivate: boolean): Promise<string | null> {
  if (allowPrivate) return null;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [host]
    : await Promise.race([
        lookupAll(host, { all: true }).then((entries) => entries.map((entry) => entry.address), () => []),
        new Promise<string[]>((resolve) => setTimeout(() => resolve([]), WARNING_LOOKUP_MS).unref()),
      ]);
  const internal = addresses.find(isForbiddenAddress);
  if (!internal) return null;
  const where = internal === host ? host : `${host} resolves to ${internal}, which`;
  return `Deliveries to this endpoint will be refused: ${where} is an internal address (loopback, private, link-local or reserved). The server sends webhooks to such addresses only when its operator sets WEBHOOK_ALLOW_PRIVATE=true.`;
}
