import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';

/** Version of the key-digest pepper; stored beside each digest so the secret can be rotated later. */
export const KEY_DIGEST_VERSION = 1;

/**
 * Keys derived from the one server secret: an HMAC pepper for credential digests and an AES key that
 * encrypts signing keys at rest. Deriving (HKDF) keeps each use separate.
 */
export class ServerSecrets {
  private readonly digestKey: Buffer;
  private readonly encryptionKey: Buffer;
  /** HMAC key of the management API's access tokens (HS256 JWTs). */
  readonly accessTokenKey: Uint8Array;
  /** HMAC key of the activity log's hash chain: without the server secret nobody can recompute it. */
  readonly auditChainKey: Buffer;
  /** HMAC key of release download links (services/releases/download-links.ts). */
  readonly downloadLinkKey: Buffer;

  constructor(secret: string) {
    const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, 'keyforge', info, 32));
    this.digestKey = derive(`credential-digest-v${KEY_DIGEST_VERSION}`);
    this.encryptionKey = derive('signing-key-encryption-v1');
    this.accessTokenKey = new Uint8Array(derive('access-token-v1'));
    this.auditChainKey = derive('audit-chain-v1');
    this.downloadLinkKey = derive('release-download-link-v1');
    processSecrets ??= this;
  }

  /** Makes these the secrets of this process (the server, worker and CLI call it at start). */
  useForProcess(): this {
    processSecrets = this;
    return this;
  }

  /** HMAC-SHA256 of a credential (license key, token), hex. */
  digest(value: string): string {
    return createHmac('sha256', this.digestKey).update(value).digest('hex');
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), body].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || !body) throw new Error('Unrecognised encrypted value');
    const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

let processSecrets: ServerSecrets | undefined;

/**
 * The process's server secrets, for code that writes the keyed activity log without a service context at
 * hand (recordAudit). Set by useForProcess(), else the first ServerSecrets constructed (scripts, seeds).
 */
export function currentServerSecrets(): ServerSecrets {
  if (!processSecrets) throw new Error('no server secret loaded: construct ServerSecrets first');
  return processSecrets;
}

/** SHA-256 hex, for values that are random already (nonces) and need no pepper. */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * The configured secret, or one generated on first start into `<dataDir>/server-secret` (mode 0600).
 * Several processes on different hosts must share SERVER_SECRET.
 */
export function loadServerSecret(configured: string | undefined, dataDir: string): { secret: string; source: 'env' | 'file' | 'generated' } {
  if (configured) return { secret: configured, source: 'env' };
  const file = path.join(dataDir, 'server-secret');
  if (existsSync(file)) return { secret: readFileSync(file, 'utf8').trim(), source: 'file' };
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  // 'wx' fails if another process created it meanwhile; then read theirs.
  try {
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch {
    return { secret: readFileSync(file, 'utf8').trim(), source: 'file' };
  }
  return { secret, source: 'generated' };
}
