// Copy-paste integration snippets for one license: the real server origin, the license's product and its
// key hint (the key itself is shown once, at creation, so the snippets read it from LICENSE_KEY).
// The SDK snippet comes first (docs/integrate/sdk.md); the raw HTTP ones are for other languages.

export interface SnippetLicense {
  keyHint: string;
  productName: string;
  nodeLocked: boolean;
  floatingSeats: number | null;
}

export interface Snippet {
  id: 'sdk' | 'curl' | 'typescript' | 'floating';
  label: string;
  language: 'bash' | 'typescript';
  code: string;
}

const quote = (value: string) => JSON.stringify(value);

export function integrationSnippets(origin: string, license: SnippetLicense): Snippet[] {
  const api = `${origin}/api/v1`;
  const device = license.nodeLocked ? ', "deviceId": "<sha256 of this machine\'s hardware id>"' : ', "deviceId": "my-laptop"';
  const slug = license.productName.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'app';
  const sdk = `// @keyforge/client is not on a public registry: pack it in the Keyforge repository
// (pnpm --filter @keyforge/client build && cd sdk && npm pack), then in your app: npm install /path/to/keyforge-client-*.tgz
// Activation, validation with the signed offline token, retries, offline grace.
import os from 'node:os';
import path from 'node:path';
import { KeyforgeClient } from '@keyforge/client';
import { FileStore, machineFingerprint } from '@keyforge/client/node'; // Node/Electron; in a browser: new LocalStorageStore()

const PRODUCT = ${quote(license.productName)};
const keyforge = new KeyforgeClient({
  baseUrl: ${quote(origin)},
  product: PRODUCT,
  // Keeps the last verified token, for launches without a network (within the license's offline grace).
  store: new FileStore(path.join(os.homedir(), ${quote(`.${slug}`)}, 'license.json')),
  // jwks: keys saved from ${origin}/.well-known/jwks.json, to pin them at build time.
});
const device = () => machineFingerprint({ salt: PRODUCT }); // SHA-256 of this machine's id

// Once per installation (takes a seat; a retry never takes a second one).
export async function activate(licenseKey: string) {
  return keyforge.activate({ licenseKey, deviceId: await device() }); // throws e.g. SeatsExhausted
}

// On every launch. requireActivation: also refused once this device is deactivated (DeviceNotActivated).
// Offline, the stored token answers until its grace period ends.
export async function isLicensed(licenseKey: string, version: string): Promise<boolean> {
  try {
    // Resolves only for a verified, signed entitlement of this product and device: see its .entitlement.features.
    await keyforge.validate({ licenseKey, version, deviceId: await device(), requireActivation: true, offlineFallback: true });
    return true;
  } catch {
    return false; // error.code says why: DeviceNotActivated, LicenseExpired, LicenseRevoked, TokenExpired, WrongProduct …
  }
}`;

  const curl = `# The key shown when the license was created or its key reissued (${license.keyHint}); never put it in a URL.
export LICENSE_KEY='${license.keyHint.replace('…', 'XXXX-XXXX-XXXX')}'

# Activate this installation (takes a seat; a retry with the same deviceId reuses it).
NONCE=$(curl -s ${api}/nonce | jq -r .nonce)
curl -s ${api}/activate -H 'content-type: application/json' \\
  -d "{\\"licenseKey\\": \\"$LICENSE_KEY\\", \\"nonce\\": \\"$NONCE\\"${device.replace(/"/g, '\\"')}}" | jq

# Check it on every launch; grant access only when isValid is true. requireActivation: this device must still
# hold its activation (a deactivated one answers errorCode DeviceNotActivated); leave it out to check the license only.
curl -s ${api}/validate -H 'content-type: application/json' \\
  -d "{\\"licenseKey\\": \\"$LICENSE_KEY\\"${device.replace(/"/g, '\\"')}, \\"requireActivation\\": true}" | jq`;

  const typescript = `// npm install jose  — verifies the signed offline token against the published keys.
import { createRemoteJWKSet, jwtVerify } from 'jose';

const API = ${quote(api)};
const PRODUCT = ${quote(license.productName)};
const jwks = createRemoteJWKSet(new URL(${quote(`${origin}/.well-known/jwks.json`)}));

async function post(path: string, body: unknown) {
  const response = await fetch(API + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(\`\${path}: HTTP \${response.status}\`); // 429: honour Retry-After
  return response.json();
}

export async function activate(licenseKey: string, deviceId: string) {
  const { nonce } = await (await fetch(API + '/nonce')).json();
  return post('/activate', { licenseKey, nonce, deviceId }); // { isValid, errorCode, remainingActivations, … }
}

// requireActivation: this device must still hold its activation (else errorCode DeviceNotActivated).
export async function isLicensed(licenseKey: string, deviceId: string, version: string): Promise<boolean> {
  const result = await post('/validate', { licenseKey, deviceId, requireActivation: true, version });
  // HTTP 200 can carry a rejection; and the key must be for this product.
  if (!result.isValid || (result.productName !== PRODUCT && !result.bundleProducts?.includes(PRODUCT))) return false;
  // Cache result.offlineCacheToken; offline, trust only a token that verifies (never the cached JSON), for this device.
  const { payload } = await jwtVerify(result.offlineCacheToken, jwks, { algorithms: ['EdDSA'] });
  return payload.device === deviceId && payload.deviceActivated === true;
}`;

  const snippets: Snippet[] = [
    { id: 'sdk', label: 'TypeScript SDK', language: 'typescript', code: sdk },
    { id: 'curl', label: 'curl', language: 'bash', code: curl },
    { id: 'typescript', label: 'TypeScript (fetch + jose)', language: 'typescript', code: typescript },
  ];
  if (license.floatingSeats !== null) {
    snippets.push({
      id: 'floating',
      label: 'Floating seat',
      language: 'bash',
      code: `# At start: check out one of the ${license.floatingSeats} floating seats; keep the session token in memory.
SESSION_TOKEN=$(curl -s ${api}/float/checkout -H 'content-type: application/json' \\
  -d "{\\"licenseKey\\": \\"$LICENSE_KEY\\", \\"deviceId\\": \\"render-node-4\\"}" | jq -r .sessionToken)

# Every 60 s while running (the lease lasts 300 s):
curl -s -X POST ${api}/float/heartbeat -H "authorization: Bearer $SESSION_TOKEN" | jq

# At exit: free the seat at once.
curl -s -X POST ${api}/float/checkin -H "authorization: Bearer $SESSION_TOKEN" | jq`,
    });
  }
  return snippets;
}
