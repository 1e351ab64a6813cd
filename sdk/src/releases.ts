import { compactVerify } from 'jose';
import { KeyforgeError, VerificationError } from './errors.js';
import type { KeyRing } from './keys.js';

/** A downloadable file of a release (`GET /api/v1/releases`). */
export interface Artifact {
  id: string;
  filename: string;
  /** `win32`, `darwin`, `linux` … */
  platform: string;
  /** `x64`, `arm64` … */
  arch: string;
  /** `exe`, `dmg`, `AppImage`, `tar.gz` … */
  filetype: string;
  /** Bytes. */
  size: number;
  /** Lower-case hex. */
  sha256: string;
  /** Lower-case hex. */
  sha512: string;
  /** The server's Ed25519 signature over the file's identity and digests (a compact JWS): checked by {@link KeyforgeClient.verifyArtifact}. */
  signature: string;
}

/** A published release this license may download. */
export interface Release {
  id: string;
  /** The product's id. */
  product: string;
  /** Semantic version. */
  version: string;
  /** `stable`, `rc`, `beta`, `alpha` or `dev`. */
  channel: string;
  status: string;
  notes: string | null;
  /** ISO 8601. */
  publishedAt: string;
  artifacts: Artifact[];
}

/** Why no update is offered. */
export type UpdateUnavailableReason = 'NoNewerRelease' | 'MaintenanceExpired' | 'FeatureMissing' | (string & {});

/** The answer of {@link KeyforgeClient.checkForUpdate}. */
export interface UpdateCheck {
  /** True when `release` is newer than the running version and this license may install it. */
  available: boolean;
  /**
   * Set when `available` is false: `NoNewerRelease`; `MaintenanceExpired` or `FeatureMissing` — then `release` is the
   * newest newer release this license may not install (tell the user what renewing would bring).
   */
  reason?: UpdateUnavailableReason;
  release: Release | null;
}

/** What the server signed about an artifact (the payload of its `signature`). */
export interface ArtifactClaims {
  typ: 'keyforge.artifact';
  iss: string;
  /** The product's id. */
  product: string;
  /** The product's name (what the client's `product` option names). */
  productName?: string;
  release: string;
  version: string;
  artifact: string;
  filename: string;
  platform: string;
  arch: string;
  size: number;
  sha256: string;
  sha512: string;
  iat: number;
  [claim: string]: unknown;
}

export interface ReleaseQuery {
  /** The most unstable channel wanted (a channel includes the more stable ones). Default: `stable`. */
  channel?: string;
  /** Default: this process's platform where it has one (Node, Electron, Bun, Deno: `win32`, `darwin`, `linux`); a browser sends none. */
  platform?: string;
  /** Default: this process's architecture (`x64`, `arm64`) where it has one. */
  arch?: string;
}

const PLATFORMS: Record<string, string> = { win32: 'win32', darwin: 'darwin', linux: 'linux' };
const ARCHES: Record<string, string> = { x64: 'x64', arm64: 'arm64' };

/**
 * The running process's platform and architecture in the release API's terms (`win32`/`darwin`/`linux`,
 * `x64`/`arm64`), from `process.platform`/`process.arch` (Node, Electron, Bun, Deno). Undefined where there is no such
 * process (a browser) or for a value the API does not name: the query then does not filter by it.
 */
export function currentPlatform(): { platform?: string; arch?: string } {
  const proc = (globalThis as { process?: { platform?: unknown; arch?: unknown } }).process;
  const platform = typeof proc?.platform === 'string' ? PLATFORMS[proc.platform] : undefined;
  const arch = typeof proc?.arch === 'string' ? ARCHES[proc.arch] : undefined;
  return { platform, arch };
}

const integrity = (message: string, cause?: unknown) => new VerificationError('ArtifactIntegrity', message, cause === undefined ? undefined : { cause });

/**
 * Verifies an artifact's signature as an offline token is verified — EdDSA only, a `kid` of the trusted keys (pinned,
 * or the server's JWKS), the issuer — then that it is an artifact signature (`typ`) whose `productName` (or `product`) is one of `products`, for this
 * artifact (`artifact`, `size`, `sha256`, `sha512` equal to the listing's). Any failure is `ArtifactIntegrity`.
 */
export async function verifyArtifactSignature(
  artifact: Pick<Artifact, 'id' | 'size' | 'sha256' | 'sha512' | 'signature'>,
  options: { keys: KeyRing; issuer: string; products: readonly string[]; online: boolean; signal?: AbortSignal },
): Promise<ArtifactClaims> {
  if (typeof artifact?.signature !== 'string') throw integrity('The artifact carries no signature.');
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(artifact.signature, (header) => options.keys.keyFor(header.kid, { online: options.online, signal: options.signal }), { algorithms: ['EdDSA'] }));
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    const reason = error instanceof KeyforgeError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
    throw integrity(`The artifact's signature does not verify (${reason}): tampered, or not signed by this server.`, error);
  }
  let claims: Record<string, unknown>;
  try {
    claims = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as Record<string, unknown>;
  } catch (error) {
    throw integrity('The artifact\'s signed payload is not JSON.', error);
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw integrity('The artifact\'s signed payload is not a JSON object.');
  if (claims.typ !== 'keyforge.artifact') throw integrity('The signature is not an artifact signature (typ).');
  if (claims.iss !== options.issuer) throw integrity(`The artifact's signature was not issued by ${options.issuer}.`);
  // `productName` is the product's name (`product` its id); a name is what the client knows.
  const named = [claims.productName, claims.product].filter((value): value is string => typeof value === 'string');
  if (!named.some((name) => options.products.includes(name))) throw integrity('The artifact is signed for another product.');
  if (claims.artifact !== artifact.id) throw integrity('The signature is of another artifact.');
  if (typeof claims.size !== 'number' || !Number.isSafeInteger(claims.size) || claims.size < 0 || typeof claims.sha256 !== 'string' || typeof claims.sha512 !== 'string') {
    throw integrity('The artifact\'s signature names no size and digests.');
  }
  if (claims.size !== artifact.size || claims.sha256 !== artifact.sha256?.toLowerCase() || claims.sha512 !== artifact.sha512?.toLowerCase()) {
    throw integrity('The artifact\'s listed size or digests differ from the signed ones.');
  }
  return claims as ArtifactClaims;
}

/** Checks `bytes` against the signed size, SHA-256 and SHA-512 (`ArtifactIntegrity` on any difference). */
export async function checkArtifactBytes(claims: Pick<ArtifactClaims, 'size' | 'sha256' | 'sha512'>, bytes: Uint8Array): Promise<void> {
  if (bytes.length !== claims.size) throw integrity(`The file is ${bytes.length} bytes; ${claims.size} were signed.`);
  // WebCrypto refuses views of a SharedArrayBuffer: such bytes are copied first.
  const data = bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : bytes.slice();
  const [sha256, sha512] = await Promise.all([crypto.subtle.digest('SHA-256', data), crypto.subtle.digest('SHA-512', data)]);
  checkArtifactDigests(claims, { size: bytes.length, sha256: hex(sha256), sha512: hex(sha512) });
}

/**
 * Checks the size and lower-case hex digests of a file hashed elsewhere (as it streamed to disk) against the signed
 * ones: the checks of {@link checkArtifactBytes}, with its errors.
 */
export function checkArtifactDigests(claims: Pick<ArtifactClaims, 'size' | 'sha256' | 'sha512'>, file: { size: number; sha256: string; sha512: string }): void {
  if (file.size !== claims.size) throw integrity(`The file is ${file.size} bytes; ${claims.size} were signed.`);
  if (file.sha256 !== claims.sha256) throw integrity('The file\'s SHA-256 is not the signed one.');
  if (file.sha512 !== claims.sha512) throw integrity('The file\'s SHA-512 is not the signed one.');
}

const hex = (buffer: ArrayBuffer) => Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, '0')).join('');

/**
 * Where {@link fetchArtifact} puts the bytes of a download: `begin` before each attempt (a retry fetches the whole file
 * again, so whatever the previous attempt wrote is dropped), then `write` for each chunk, at most the signed size in all.
 */
export interface ArtifactSink {
  begin(claims: ArtifactClaims): void | Promise<void>;
  write(chunk: Uint8Array): void | Promise<void>;
}

/**
 * The key of the client's method that verifies an artifact's signature and streams its file into an
 * {@link ArtifactSink} (unchecked: the caller checks the digests). Not exported by the package: it is how
 * `@keyforge/client/node` streams a download to disk without the universal entry importing `node:` modules.
 */
export const fetchArtifact = Symbol('keyforge.fetchArtifact');
