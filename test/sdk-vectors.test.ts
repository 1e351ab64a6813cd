// The SDK conformance vectors (sdks/conformance/vectors.json): the committed file is what the server's code
// generates now, and the TypeScript SDK gives every vector its expected verdict. The Go, Python and .NET SDKs read
// the same file in their own tests.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KeyforgeClient, KeyforgeError, MemoryStore, type Artifact } from '../sdk/src/index.js';
import { KeyRing, type JSONWebKeySet } from '../sdk/src/keys.js';
import { encodeRequest, keyHint, requestMac, signDeactivationProof, type RequestFields } from '../sdk/src/license-files.js';
import { verifyOfflineToken } from '../sdk/src/tokens.js';
import { normalizeKey, sha256Hex } from '../sdk/src/util.js';
import { VECTORS_PATH, generateVectors, serialize } from '../sdks/conformance/generate.js';

type Expect = { valid: true; claims?: Record<string, unknown> } | { valid: false; error: string };
interface Vectors {
  issuer: string;
  product: string;
  clockToleranceSeconds: number;
  keys: Record<string, { kid?: string; seed: string; x: string }>;
  jwks: Record<string, JSONWebKeySet>;
  offlineTokens: { name: string; token: string; jwks: string; now: number; products?: string[]; deviceId?: string; requireActivation?: boolean; challenge?: string; offline: boolean; expect: Expect }[];
  licenseFiles: { name: string; file: string; jwks: string; now: number; licenseKey?: string; deviceId?: string; requireActivation?: boolean; expect: Expect }[];
  activationRequests: { name: string; licenseKey: string; deviceKey: string; fields: Omit<RequestFields, never>; mac: string; request: string; compact: string; expect: Expect }[];
  activationResponses: { name: string; response: string; jwks: string; now: number; pending: { deviceId: string; challenge: string; pub: string }; licenseKey?: string; expect: Expect }[];
  artifactSignatures: { name: string; jwks: string; artifact: Artifact; file: string; expect: Expect }[];
  deactivationProofs: { name: string; deviceKey: string; activation: { devicePublicKey: string }; claims: { kind: string; activation: string; license: string; device: string; iat: number; jti: string }; proof: string; expect: Expect }[];
}

const committed = readFileSync(VECTORS_PATH, 'utf8');
const vectors = JSON.parse(committed) as Vectors;
const STORE_LICENSE_KEY = 'ACME-7KQ2-M9XH-4TRB-WZ3P';

const noNetwork = (() => {
  throw new Error('the vectors are checked without a network');
}) as unknown as typeof fetch;

function client(options: { jwks: string; now: number; products?: string[]; store?: MemoryStore }) {
  return new KeyforgeClient({
    baseUrl: vectors.issuer,
    product: options.products ?? vectors.product,
    jwks: vectors.jwks[options.jwks],
    store: options.store ?? new MemoryStore(),
    clock: () => options.now * 1000,
    clockToleranceSeconds: vectors.clockToleranceSeconds,
    fetch: noNetwork,
  });
}

/** The store key the client keeps a license's records under (its digest of the issuer and the key). */
async function licenseDigest(licenseKey: string): Promise<string> {
  return (await sha256Hex(`${vectors.issuer}\n${normalizeKey(licenseKey)}`)).slice(0, 32);
}

/** The verdict of a call: its claims, or the code of the SDK error it threw (anything else fails the test). */
async function verdict(call: () => Promise<{ claims: unknown }>): Promise<Expect> {
  try {
    const { claims } = await call();
    return { valid: true, claims: claims as Record<string, unknown> };
  } catch (error) {
    if (!(error instanceof KeyforgeError)) throw error;
    return { valid: false, error: error.code };
  }
}

const asExpected = (expected: Expect) => (expected.valid ? { valid: true, claims: expected.claims } : expected);

describe('the committed vectors', () => {
  it('are what generate.ts writes now (run `pnpm sdk:vectors` after changing the server or the generator)', async () => {
    const fresh = serialize(await generateVectors());
    expect(fresh === committed, 'sdks/conformance/vectors.json is stale: run pnpm sdk:vectors and commit it').toBe(true);
  });

  it('cover every kind the SDKs check, each with accepted and refused cases', () => {
    for (const list of [vectors.offlineTokens, vectors.licenseFiles, vectors.activationRequests, vectors.activationResponses, vectors.deactivationProofs, vectors.artifactSignatures]) {
      expect(list.some((vector) => vector.expect.valid)).toBe(true);
      expect(list.some((vector) => !vector.expect.valid)).toBe(true);
      expect(new Set(list.map((vector) => vector.name)).size).toBe(list.length);
    }
  });
});

describe('the TypeScript SDK agrees with every vector', () => {
  it.each(vectors.offlineTokens.map((vector) => [vector.name, vector] as const))('offline token %s', async (_name, vector) => {
    let result: Expect;
    if (vector.offline) {
      // validateOffline, from a stored token record measured with no clock skew and no earlier time seen.
      const store = new MemoryStore();
      await store.set(`license:${await licenseDigest(STORE_LICENSE_KEY)}`, JSON.stringify({ v: 1, token: vector.token, skewMs: 0, lastSeenAt: 0 }));
      const sdk = client({ jwks: vector.jwks, now: vector.now, products: vector.products, store });
      result = await verdict(async () => (await sdk.validateOffline({ licenseKey: STORE_LICENSE_KEY, deviceId: vector.deviceId, requireActivation: vector.requireActivation })).entitlement);
    } else {
      // The check validate makes of the online answer's token.
      const keys = new KeyRing(vector.jwks ? vectors.jwks[vector.jwks] : undefined, null as never, new MemoryStore(), 'jwks', () => vector.now * 1000);
      result = await verdict(() =>
        verifyOfflineToken(vector.token, {
          keys,
          online: false,
          issuer: vectors.issuer,
          products: vector.products ?? [vectors.product],
          now: new Date(vector.now * 1000),
          clockToleranceSeconds: vectors.clockToleranceSeconds,
          deviceId: vector.deviceId,
          requireActivation: vector.requireActivation,
          challenge: vector.challenge,
        }),
      );
    }
    expect(result).toEqual(asExpected(vector.expect));
  });

  it.each(vectors.licenseFiles.map((vector) => [vector.name, vector] as const))('license file %s', async (_name, vector) => {
    const sdk = client({ jwks: vector.jwks, now: vector.now });
    const result = await verdict(() => sdk.verifyLicenseFile(vector.file, { licenseKey: vector.licenseKey, deviceId: vector.deviceId, requireActivation: vector.requireActivation }));
    expect(result).toEqual(asExpected(vector.expect));
  });

  it.each(vectors.activationRequests.map((vector) => [vector.name, vector] as const))('activation request %s', async (_name, vector) => {
    const mac = await requestMac(vector.licenseKey, vector.fields);
    expect(mac === vector.mac).toBe(vector.expect.valid);
    if (vector.expect.valid) {
      expect(keyHint(vector.licenseKey)).toBe(vector.fields.hint);
      expect(vector.fields.pub).toBe(vectors.keys[vector.deviceKey].x);
      // The SDK's writer produces the same text, byte for byte.
      expect(encodeRequest({ ...vector.fields, mac })).toEqual({ request: vector.request, compact: vector.compact });
    }
  });

  it.each(vectors.activationResponses.map((vector) => [vector.name, vector] as const))('activation response %s', async (_name, vector) => {
    // The installation's state after createActivationRequest: the pending device key, found by its challenge.
    const store = new MemoryStore();
    const digest = await licenseDigest(STORE_LICENSE_KEY);
    const device = vectors.keys.device;
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: device.x, d: device.seed };
    await store.set(`device-key:${digest}`, JSON.stringify({ v: 1, pending: { jwk, pub: vector.pending.pub, deviceId: vector.pending.deviceId, challenge: vector.pending.challenge } }));
    await store.set(`offline-request:${vector.pending.challenge}`, digest);
    const sdk = client({ jwks: vector.jwks, now: vector.now, store });
    const result = await verdict(async () => (await sdk.applyActivationResponse(vector.response, { licenseKey: vector.licenseKey ? STORE_LICENSE_KEY : undefined })).entitlement);
    expect(result).toEqual(asExpected(vector.expect));
    if (vector.expect.valid) {
      // Installed: validateOffline answers from it, and deactivateOffline writes a proof for its activation.
      const offline = await sdk.validateOffline({ licenseKey: STORE_LICENSE_KEY, deviceId: vector.pending.deviceId, requireActivation: true });
      expect(offline.entitlement.claims).toEqual(vector.expect.claims);
      const { activationId } = await sdk.deactivateOffline({ licenseKey: STORE_LICENSE_KEY });
      expect(activationId).toBe(vector.expect.claims!.activation);
    }
  });

  it.each(vectors.artifactSignatures.map((vector) => [vector.name, vector] as const))('artifact signature %s', async (_name, vector) => {
    // verifyArtifact: the check downloadArtifact makes of the signature and the downloaded bytes.
    const sdk = client({ jwks: vector.jwks, now: 0 });
    const result = await verdict(async () => ({ claims: await sdk.verifyArtifact(vector.artifact, Buffer.from(vector.file, 'base64url')) }));
    expect(result).toEqual(asExpected(vector.expect));
  });

  it.each(vectors.deactivationProofs.map((vector) => [vector.name, vector] as const))('deactivation proof %s', async (_name, vector) => {
    // The SDK holding the stored activation's device key, asked for a proof of these claims.
    const key = Object.values(vectors.keys).find((candidate) => candidate.x === vector.activation.devicePublicKey)!;
    const { kind, ...claims } = vector.claims;
    const written = await signDeactivationProof({ kty: 'OKP', crv: 'Ed25519', x: key.x, d: key.seed }, claims);
    // A proof the server accepts (or that names an activation it lacks) is exactly what that device's SDK writes; an
    // edited one, another device's, or one of another kind never is.
    const genuine = vector.expect.valid || vector.expect.error === 'NotFound';
    expect(written === vector.proof).toBe(genuine && kind === 'keyforge-deactivation');
  });
});
