import fc from 'fast-check';
import { KeyforgeClient, MemoryStore } from '../../sdk/src/index.js';
import type { TestApp } from './harness.js';
import { hostileString, hostileValue } from './hostile.js';

/**
 * Armored text for the fuzzers of license files and offline activation: genuine samples (an activation request for
 * a license of the fuzzed company and one of another company, a license file, a deactivation proof), and each of them
 * truncated, re-encoded with other content, spliced, oversize, or under another label.
 */
export const armoredSamples: string[] = [];

const ACTIVATE = 'mutation($input: ActivateOfflineInput!) { activateOffline(input: $input) { licenseFile } }';

/** Fills armoredSamples; returns the id of the fuzzed company's license the samples are for. */
export async function seedArmoredSamples(t: TestApp, token: string, tenantId: string, productId: string): Promise<string> {
  const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 1000 });
  const other = await t.seedTenant({ name: 'Globex', keyPrefix: 'GLBX' });
  const otherProduct = await t.seedProduct(other.id);
  const { key: otherKey } = await t.seedLicense(other.id, otherProduct.id);
  const product = (await t.prisma.product.findUniqueOrThrow({ where: { id: productId } })).name;
  const sdk = new KeyforgeClient({ baseUrl: t.baseUrl, issuer: t.config.publicUrl, product, jwks: (await t.get('/.well-known/jwks.json')).json, store: new MemoryStore(), clock: () => t.clock.now().getTime() });
  const mine = await sdk.createActivationRequest({ licenseKey: key, deviceId: 'fuzz-sample', deviceName: 'Fuzz sample' });
  const foreign = await sdk.createActivationRequest({ licenseKey: otherKey, deviceId: 'fuzz-foreign' });
  const answer = await t.gqlData(ACTIVATE, { input: { licenseId: license.id, request: mine.request } }, { token });
  await sdk.applyActivationResponse(answer.activateOffline.licenseFile);
  const { proof } = await sdk.deactivateOffline({ licenseKey: key });
  const fresh = await sdk.createActivationRequest({ licenseKey: key, deviceId: 'fuzz-fresh' });
  armoredSamples.push(fresh.request, fresh.compact, foreign.request, foreign.compact, answer.activateOffline.licenseFile, proof);
  return license.id;
}

const sample = fc.nat().map((n) => armoredSamples[n % armoredSamples.length]);
const LABELS = ['LICENSE FILE', 'ACTIVATION REQUEST', 'DEACTIVATION PROOF', 'PGP MESSAGE', ''];
const armorOf = (label: string, payload: Buffer) => `-----BEGIN KEYFORGE ${label}-----\n${payload.toString('base64').match(/.{1,64}/g)?.join('\n') ?? ''}\n-----END KEYFORGE ${label}-----\n`;
const payloadOf = (text: string) => {
  const body = /-----\n([\s\S]*?)\n-----END/.exec(text)?.[1] ?? text.replace(/^KFREQ1:/, '');
  return Buffer.from(body.replace(/\s+/g, ''), body.includes('-') || body.includes('_') ? 'base64url' : 'base64');
};

/** Armored input, mostly derived from a genuine sample. */
export const armoredText: fc.Arbitrary<string> = fc.oneof(
  sample,
  // Truncated anywhere.
  fc.tuple(sample, fc.nat()).map(([text, at]) => text.slice(0, at % (text.length + 1))),
  // Its JSON (or JWS) with a field replaced by a hostile value, re-encoded under the same or another label.
  fc.tuple(sample, hostileString, hostileValue, fc.constantFrom(...LABELS)).map(([text, field, value, label]) => {
    let content: unknown;
    try {
      content = JSON.parse(payloadOf(text).toString('utf8'));
    } catch {
      content = payloadOf(text).toString('utf8');
    }
    const edited = content && typeof content === 'object' ? { ...(content as object), [field]: value } : `${String(content)}.${JSON.stringify(value)}`;
    return armorOf(label, Buffer.from(typeof edited === 'string' ? edited : JSON.stringify(edited)));
  }),
  // A byte of the payload flipped, or the base64 lines re-wrapped and quoted.
  fc.tuple(sample, fc.nat(), fc.nat(255)).map(([text, at, byte]) => {
    const payload = Buffer.from(payloadOf(text));
    if (payload.length) payload[at % payload.length] = byte;
    return armorOf(/BEGIN KEYFORGE ([A-Z ]+)-----/.exec(text)?.[1] ?? 'ACTIVATION REQUEST', payload);
  }),
  sample.map((text) => text.replace(/\n/g, '\r\n> ').replace(/(.{7})/g, '$1 ')),
  // Oversize: a sample with a long tail, or a huge body.
  fc.tuple(sample, fc.nat(40_000)).map(([text, n]) => text + 'A'.repeat(n)),
  fc.nat(30_000).map((n) => armorOf('ACTIVATION REQUEST', Buffer.alloc(n, 7))),
  fc.nat(30_000).map((n) => `KFREQ1:${'e30'.repeat(n)}`),
  // Hostile JSON armored.
  fc.tuple(hostileValue, fc.constantFrom(...LABELS)).map(([value, label]) => armorOf(label, Buffer.from(JSON.stringify(value) ?? 'null'))),
  hostileString,
);
