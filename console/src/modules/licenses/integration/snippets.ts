// Copy-paste integration snippets for one license: the real server origin, the license's product and its
// key hint (the key itself is shown once, at creation, so the snippets read it from LICENSE_KEY).

export interface SnippetLicense {
  keyHint: string;
  productName: string;
  nodeLocked: boolean;
  floatingSeats: number | null;
}

export interface Snippet {
  id: 'curl' | 'typescript' | 'floating';
  label: string;
  language: 'bash' | 'typescript';
  code: string;
}

const quote = (value: string) => JSON.stringify(value);

export function integrationSnippets(origin: string, license: SnippetLicense): Snippet[] {
  const api = `${origin}/api/v1`;
  const device = license.nodeLocked ? ', "deviceId": "<sha256 of this machine\'s hardware id>"' : ', "deviceId": "my-laptop"';
  const curl = `# The key shown when the license was created (${license.keyHint}); never put it in a URL.
export LICENSE_KEY='${license.keyHint.replace('…', 'XXXX-XXXX-XXXX')}'

# Activate this installation (takes a seat; a retry with the same deviceId reuses it).
NONCE=$(curl -s ${api}/nonce | jq -r .nonce)
curl -s ${api}/activate -H 'content-type: application/json' \\
  -d "{\\"licenseKey\\": \\"$LICENSE_KEY\\", \\"nonce\\": \\"$NONCE\\"${device.replace(/"/g, '\\"')}}" | jq

# Check it on every launch (changes nothing); grant access only when isValid is true.
curl -s ${api}/validate -H 'content-type: application/json' \\
  -d "{\\"licenseKey\\": \\"$LICENSE_KEY\\"}" | jq`;

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

export async function isLicensed(licenseKey: string, version: string): Promise<boolean> {
  const result = await post('/validate', { licenseKey, version });
  // HTTP 200 can carry a rejection; and the key must be for this product.
  if (!result.isValid || (result.productName !== PRODUCT && !result.bundleProducts?.includes(PRODUCT))) return false;
  // Cache result.offlineCacheToken; offline, trust only a token that verifies (never the cached JSON).
  await jwtVerify(result.offlineCacheToken, jwks, { algorithms: ['EdDSA'] });
  return true;
}`;

  const snippets: Snippet[] = [
    { id: 'curl', label: 'curl', language: 'bash', code: curl },
    { id: 'typescript', label: 'TypeScript', language: 'typescript', code: typescript },
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
