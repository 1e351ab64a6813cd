/**
 * Update feeds in the formats auto-updaters read, built from the releases a license may download:
 *
 * - electron-builder's generic provider (electron-updater): `latest.yml` (Windows), `latest-mac.yml`,
 *   `latest-linux.yml` (and `latest-linux-<arch>.yml`), each an UpdateInfo document: `version`, `files` (`url`,
 *   `sha512` in base64, `size`), the legacy `path` and `sha512` of the first file, `releaseDate`, `releaseNotes`.
 * - Tauri's updater, as a dynamic server: 204 when there is no update, else `{ version, notes, pub_date, url,
 *   signature }`, where `signature` is the content of the vendor's minisign `.sig` file for the artifact (Tauri checks
 *   it with the public key built into the application; Keyforge cannot make it).
 *
 * The formats carry no license information: the routes (rest/v1/feeds.ts) choose what a license may see, and every
 * file URL in a feed points at a license-gated download route.
 */

import type { Database } from '../../db/database.js';

/** An artifact as the feeds need it (the public API's Artifact, plus the vendor's Tauri signature). */
export interface FeedArtifact {
  id: string;
  filename: string;
  platform: string;
  arch: string;
  filetype: string;
  size: number;
  sha512: string; // hex
  tauriSignature?: string | null;
}

export interface FeedRelease {
  version: string;
  notes: string | null;
  publishedAt: string | Date | null;
  artifacts: FeedArtifact[];
}

/** The channel files electron-updater asks for, and the artifacts each lists. `arch: null`: every architecture. */
export const ELECTRON_FEED_FILES: Record<string, { platform: string; arch: string | null }> = {
  'latest.yml': { platform: 'win32', arch: null },
  'latest-mac.yml': { platform: 'darwin', arch: null },
  'latest-linux.yml': { platform: 'linux', arch: 'x64' },
  'latest-linux-arm64.yml': { platform: 'linux', arch: 'arm64' },
  'latest-linux-armv7l.yml': { platform: 'linux', arch: 'armv7l' },
  'latest-linux-ia32.yml': { platform: 'linux', arch: 'ia32' },
};

/**
 * The file types each platform's updater installs, most wanted first: electron-updater takes the first `.exe` on
 * Windows (NSIS), the `.zip` on macOS (Squirrel.Mac installs from it; the `.dmg` is for first installs) and the
 * `.AppImage` on Linux. Listed first, the installable file is also the legacy `path`.
 */
const ELECTRON_PREFERENCE: Record<string, string[]> = {
  win32: ['exe', 'msi'],
  darwin: ['zip', 'dmg'],
  linux: ['AppImage', 'deb', 'rpm'],
};

function preferenceRank(order: string[] | undefined, filetype: string): number {
  const index = (order ?? []).findIndex((type) => type.toLowerCase() === filetype.toLowerCase());
  return index === -1 ? Number.MAX_SAFE_INTEGER : index;
}

/** The artifacts of `release` for a feed file, in the order the updater should see them. */
export function electronFeedArtifacts(release: FeedRelease, file: { platform: string; arch: string | null }): FeedArtifact[] {
  const order = ELECTRON_PREFERENCE[file.platform];
  return release.artifacts
    .filter((artifact) => artifact.platform === file.platform && (file.arch === null || artifact.arch === file.arch))
    .sort((a, b) => preferenceRank(order, a.filetype) - preferenceRank(order, b.filetype) || archRank(a.arch) - archRank(b.arch) || a.filename.localeCompare(b.filename));
}

/** x64 before arm64 before the rest: the legacy `path` is the most common machine's file. */
function archRank(arch: string): number {
  const index = ['x64', 'arm64', 'universal'].indexOf(arch);
  return index === -1 ? 3 : index;
}

/** Hex (how Keyforge stores digests) to base64 (what electron-updater compares a download against). */
export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

/** A YAML double-quoted scalar. JSON's string syntax is a subset of YAML's double-quoted style. */
function yamlString(value: string): string {
  return JSON.stringify(value);
}

function isoDate(value: string | Date | null): string {
  return (value === null ? new Date(0) : new Date(value)).toISOString();
}

/**
 * The UpdateInfo document of electron-builder's generic provider. `urlOf` gives each file's URL: relative ones are
 * resolved by electron-updater against the feed's base URL.
 */
export function electronFeedYaml(release: FeedRelease, artifacts: FeedArtifact[], urlOf: (artifact: FeedArtifact) => string): string {
  if (artifacts.length === 0) throw new Error('a feed needs at least one file');
  const lines = [`version: ${yamlString(release.version)}`, 'files:'];
  for (const artifact of artifacts) {
    lines.push(`  - url: ${yamlString(urlOf(artifact))}`, `    sha512: ${yamlString(hexToBase64(artifact.sha512))}`, `    size: ${artifact.size}`);
  }
  const first = artifacts[0]!;
  lines.push(`path: ${yamlString(urlOf(first))}`, `sha512: ${yamlString(hexToBase64(first.sha512))}`, `releaseDate: ${yamlString(isoDate(release.publishedAt))}`);
  if (release.notes !== null && release.notes !== '') lines.push(`releaseNotes: ${yamlString(release.notes)}`);
  return `${lines.join('\n')}\n`;
}

/** Tauri's `{{target}}` and `{{arch}}` → Keyforge's platform and arch names (those of Node's process.platform/arch). */
export const TAURI_TARGETS: Record<string, string> = { windows: 'win32', darwin: 'darwin', linux: 'linux' };
export const TAURI_ARCHES: Record<string, string> = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'armv7l' };

/** What Tauri's updater installs, most wanted first: the macOS app bundle archive, the Windows installers, the AppImage. */
const TAURI_PREFERENCE: Record<string, string[]> = {
  darwin: ['app.tar.gz', 'tar.gz'],
  win32: ['msi', 'exe', 'zip', 'msi.zip', 'nsis.zip'],
  linux: ['AppImage', 'AppImage.tar.gz', 'tar.gz', 'deb', 'rpm'],
};

/** The artifact Tauri installs for `platform`/`arch`: one that carries a Tauri signature (Tauri refuses any without). */
export function tauriArtifact(release: FeedRelease, platform: string, arch: string): FeedArtifact | null {
  const order = TAURI_PREFERENCE[platform];
  const candidates = release.artifacts
    .filter((artifact) => artifact.platform === platform && (artifact.arch === arch || artifact.arch === 'universal') && artifact.tauriSignature)
    .sort((a, b) => preferenceRank(order, a.filetype) - preferenceRank(order, b.filetype) || (a.arch === arch ? -1 : 1) - (b.arch === arch ? -1 : 1));
  return candidates[0] ?? null;
}

export interface TauriUpdate {
  version: string;
  notes: string;
  pub_date: string;
  url: string;
  signature: string;
}

/** The 200 body of Tauri's dynamic update server. */
export function tauriUpdate(release: FeedRelease, artifact: FeedArtifact, url: string): TauriUpdate {
  return { version: release.version, notes: release.notes ?? '', pub_date: isoDate(release.publishedAt), url, signature: artifact.tauriSignature! };
}

export const MAX_TAURI_SIGNATURE_LENGTH = 4096;

/**
 * Null when `signature` has the shape of a Tauri `.sig` file (base64 of a minisign signature: an untrusted comment,
 * the signature line — algorithm, key id and 64 signature bytes —, a trusted comment and the global signature),
 * else what is wrong. Keyforge cannot check the signature itself (it has no access to the vendor's Tauri key); this
 * catches the wrong file pasted.
 */
export function tauriSignatureProblem(signature: string): string | null {
  const text = signature.trim();
  if (text.length === 0 || text.length > MAX_TAURI_SIGNATURE_LENGTH) return `must be the content of the .sig file (1 to ${MAX_TAURI_SIGNATURE_LENGTH} characters)`;
  if (!/^[A-Za-z0-9+/]+=*$/.test(text)) return 'must be the content of the .sig file Tauri wrote (one line of base64)';
  const lines = Buffer.from(text, 'base64').toString('utf8').split('\n').map((line) => line.replace(/\r$/, ''));
  const [untrusted, signatureLine, trusted, globalSignature] = lines;
  const bytes = (line: string | undefined) => (line && /^[A-Za-z0-9+/]+=*$/.test(line) ? Buffer.from(line, 'base64') : null);
  const sig = bytes(signatureLine);
  if (!untrusted?.startsWith('untrusted comment:') || !trusted?.startsWith('trusted comment:')) return 'is not a minisign signature (base64 of the .sig file\'s comment and signature lines)';
  if (!sig || sig.length !== 74 || !['Ed', 'ED'].includes(sig.subarray(0, 2).toString('latin1'))) return 'does not hold an Ed25519 minisign signature';
  if (bytes(globalSignature)?.length !== 64) return 'lacks the minisign global signature';
  return null;
}

/** The release with its artifacts' vendor Tauri signatures (not part of the public Release object) read in. */
export async function withTauriSignatures(db: Database, release: FeedRelease & { id: string; product: string }): Promise<FeedRelease> {
  const rows = await db.prisma.releaseArtifact.findMany({
    where: { id: { in: release.artifacts.map((artifact) => artifact.id) }, releaseId: release.id, release: { productId: release.product } },
    select: { id: true, tauriSignature: true },
  });
  const signatureOf = new Map(rows.map((row) => [row.id, row.tauriSignature]));
  return { ...release, artifacts: release.artifacts.map((artifact) => ({ ...artifact, tauriSignature: signatureOf.get(artifact.id) ?? null })) };
}
