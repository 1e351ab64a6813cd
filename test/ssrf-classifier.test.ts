import { describe, expect, it } from 'vitest';
import { checkLiteralHost, ForbiddenTargetError, isForbiddenAddress } from '../server/src/services/webhooks/ssrf.js';

// The webhook SSRF guard's address classifier, on a table of spellings. Pure: nothing is contacted.

const forbidden: [string, string][] = [
  // IPv4-compatible ::/96 (hex and dotted tails)
  ['::7f00:1', '127.0.0.1 as IPv4-compatible, hex tail'],
  ['::127.0.0.1', '127.0.0.1 as IPv4-compatible, dotted tail'],
  ['::a9fe:a9fe', 'metadata address as IPv4-compatible, hex tail'],
  ['::169.254.169.254', 'metadata address as IPv4-compatible, dotted tail'],
  ['0:0:0:0:0:0:a00:1', '10.0.0.1 as IPv4-compatible, uncompressed'],
  ['0000:0000:0000:0000:0000:0000:c0a8:0101', '192.168.1.1, leading zeros'],
  // IPv4-mapped ::ffff:0:0/96
  ['::ffff:127.0.0.1', 'mapped loopback, dotted'],
  ['::ffff:7f00:1', 'mapped loopback, hex'],
  ['::FFFF:7F00:0001', 'mapped loopback, upper case and leading zeros'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'mapped metadata, uncompressed'],
  ['::ffff:10.0.0.1', 'mapped private'],
  // IPv4-translated ::ffff:0:0:0/96
  ['::ffff:0:7f00:1', 'translated loopback, hex'],
  ['::ffff:0:127.0.0.1', 'translated loopback, dotted'],
  ['::ffff:0:a9fe:a9fe', 'translated metadata'],
  // 6to4 2002::/16 (the IPv4 address is groups 2-3)
  ['2002:7f00:1::', '6to4 of loopback'],
  ['2002:a9fe:a9fe::1', '6to4 of the metadata address'],
  ['2002:c0a8:101:1::1', '6to4 of 192.168.1.1'],
  // NAT64 well-known prefix 64:ff9b::/96
  ['64:ff9b::7f00:1', 'NAT64 of loopback, hex'],
  ['64:ff9b::169.254.169.254', 'NAT64 of the metadata address, dotted'],
  ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  // NAT64 local-use 64:ff9b:1::/48: not globally reachable, refused whatever it carries
  ['64:ff9b:1::808:808', 'local-use NAT64 (carrying 8.8.8.8)'],
  ['64:ff9b:1:ffff::1', 'local-use NAT64, any suffix'],
  // Teredo 2001::/32: server in groups 2-3, client inverted in groups 6-7
  ['2001:0:7f00:1::', 'Teredo with a loopback server'],
  ['2001:0:4136:e378:8000:63bf:80ff:fefe', 'Teredo with client 127.0.1.1 (inverted)'],
  // Native IPv6 ranges and plain IPv4
  ['::1', 'loopback'],
  ['::', 'unspecified'],
  ['0:0:0:0:0:0:0:1', 'loopback, uncompressed'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local with a zone'],
  ['fd12:3456::1', 'unique-local'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'documentation'],
  ['127.0.0.1', 'IPv4 loopback'],
  ['169.254.169.254', 'IPv4 metadata'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['not-an-address', 'garbage'],
];

const allowed: [string, string][] = [
  ['8.8.8.8', 'public IPv4'],
  ['93.184.216.34', 'public IPv4'],
  ['2606:4700:4700::1111', 'public IPv6'],
  ['2a00:1450:4001:82a::200e', 'public IPv6'],
  ['::ffff:8.8.8.8', 'mapped public IPv4'],
  ['::ffff:0:808:808', 'translated public IPv4'],
  ['::808:808', 'IPv4-compatible public IPv4'],
  ['2002:808:808::1', '6to4 of a public IPv4'],
  ['64:ff9b::8.8.8.8', 'NAT64 of a public IPv4'],
  ['64:ff9b::5db8:d822', 'NAT64 of a public IPv4, hex'],
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'Teredo with public server and client (8.8.8.8)'],
];

describe('SSRF address classifier', () => {
  it.each(forbidden)('refuses %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(allowed)('allows %s (%s)', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it('judges a URL literal after the URL parser rewrote it (dotted tails become hex)', () => {
    for (const spelling of ['[::169.254.169.254]', '[::7f00:1]', '[::a9fe:a9fe]', '[::ffff:0:7f00:1]', '[2002:7f00:1::]', '[64:ff9b::127.0.0.1]']) {
      const { hostname } = new URL(`http://${spelling}:8080/hook`);
      expect(() => checkLiteralHost(hostname, false), spelling).toThrow(ForbiddenTargetError);
      expect(checkLiteralHost(hostname, true), spelling).toBe(hostname.slice(1, -1));
    }
    expect(checkLiteralHost(new URL('http://[2606:4700:4700::1111]/').hostname, false)).toBe('2606:4700:4700::1111');
  });
});
