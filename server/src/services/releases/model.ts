import semver from 'semver';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';

/** Release channels from the most to the least stable: following a channel includes every more stable one. */
export const RELEASE_CHANNELS = ['stable', 'rc', 'beta', 'alpha', 'dev'] as const;
export type ReleaseChannel = (typeof RELEASE_CHANNELS)[number];
export const RELEASE_STATUSES = ['draft', 'published', 'yanked'] as const;
export type ReleaseStatus = (typeof RELEASE_STATUSES)[number];

/** The channels a client following `channel` sees (`beta`: stable, rc and beta). */
export function channelsUpTo(channel: ReleaseChannel): ReleaseChannel[] {
  return RELEASE_CHANNELS.slice(0, RELEASE_CHANNELS.indexOf(channel) + 1);
}

export const MAX_VERSION_LENGTH = 64;

/**
 * A semantic version as stored: `v` prefix and surrounding space dropped, build metadata (`+…`) dropped (it does not
 * order versions, so `1.2.0+a` and `1.2.0+b` would be the same release). Null when `text` is not a semantic version.
 */
export function normalizeVersion(text: string): string | null {
  if (text.length > MAX_VERSION_LENGTH) return null;
  const parsed = semver.parse(text.trim().replace(/^v(?=\d)/i, ''));
  return parsed ? parsed.version : null;
}

export const VersionSchema = z
  .string()
  .max(MAX_VERSION_LENGTH)
  .transform((value, ctx) => {
    const version = normalizeVersion(value);
    if (!version) {
      ctx.addIssue({ code: 'custom', message: 'must be a semantic version such as 1.4.0 or 2.0.0-beta.1' });
      return z.NEVER;
    }
    return version;
  });

/**
 * The sort key of a normalized semantic version (lower-case hex): byte order of the keys is semantic-version
 * precedence, so the releases list pages along an index (`releases.version_order`) instead of sorting in memory.
 * Numbers are their digit count then their digits; the core is followed by 0x02 for a release, or by 0x01 and the
 * prerelease identifiers (numeric: 0x01 and the number; alphanumeric: 0x02, the text and a 0x00 terminator) — so a
 * prerelease sorts before its release, numeric identifiers before alphanumeric ones, and fewer identifiers first.
 * The migration release_version_order computed the same keys in SQL for the releases that existed before.
 */
export function versionOrder(version: string): string {
  const number = (digits: string) => [Buffer.from([digits.length]), Buffer.from(digits, 'latin1')];
  const dash = version.indexOf('-');
  const core = dash < 0 ? version : version.slice(0, dash);
  const parts = core.split('.').flatMap(number);
  if (dash < 0) return Buffer.concat([...parts, Buffer.from([2])]).toString('hex');
  const prerelease = version
    .slice(dash + 1)
    .split('.')
    .flatMap((id) => (/^[0-9]+$/.test(id) ? [Buffer.from([1]), ...number(id)] : [Buffer.from([2]), Buffer.from(id, 'latin1'), Buffer.from([0])]));
  return Buffer.concat([...parts, Buffer.from([1]), ...prerelease]).toString('hex');
}

export const MAX_FILENAME_BYTES = 255;
/** Control (Cc), format (Cf: bidirectional overrides, zero-width) and line/paragraph separators. */
const FILENAME_FORBIDDEN_CHARS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/**
 * Why `filename` cannot name an artifact, or null when it can. It is shown to customers and sent in
 * Content-Disposition, never used as a path (the store's key is the artifact's id), but it must still be a plain
 * file name: no path separator (`/`, `\`), no `..`, no control or invisible formatting character, no drive colon,
 * no leading/trailing space, at most 255 UTF-8 bytes.
 */
export function filenameProblem(filename: string): string | null {
  if (!filename) return 'is required';
  if (Buffer.byteLength(filename, 'utf8') > MAX_FILENAME_BYTES) return `must be at most ${MAX_FILENAME_BYTES} bytes`;
  if (/[\\/]/.test(filename)) return 'must not contain a path separator (/ or \\)';
  if (filename.includes('..')) return 'must not contain ".."';
  if (FILENAME_FORBIDDEN_CHARS.test(filename)) return 'must not contain control or invisible formatting characters';
  if (/[\uD800-\uDFFF]/.test(filename.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))) return 'must be valid Unicode text';
  if (filename.includes(':')) return 'must not contain ":"';
  if (filename !== filename.trim()) return 'must not begin or end with white space';
  if (filename.startsWith('.')) return 'must not begin with "."';
  return null;
}

/** Platform and architecture names (`win32`, `darwin`, `linux`; `x64`, `arm64`, `universal`): short, lower-case words. */
export const PLATFORM_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** File types (`exe`, `dmg`, `AppImage`, `tar.gz`): short, without separators. */
export const FILETYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;

const MULTI_PART_EXTENSIONS = ['tar.gz', 'tar.xz', 'tar.bz2', 'tar.zst', 'app.tar.gz', 'nsis.zip', 'msi.zip', 'AppImage.tar.gz'];

/** The file type a file name implies (`app-1.0.0.tar.gz` → `tar.gz`, `Setup.exe` → `exe`), or null. */
export function filetypeOf(filename: string): string | null {
  const lower = filename.toLowerCase();
  const multi = MULTI_PART_EXTENSIONS.filter((ext) => lower.endsWith(`.${ext.toLowerCase()}`)).sort((a, b) => b.length - a.length)[0];
  if (multi) return filename.slice(filename.length - multi.length);
  const dot = filename.lastIndexOf('.');
  if (dot <= 0 || dot === filename.length - 1) return null;
  const ext = filename.slice(dot + 1);
  return FILETYPE_PATTERN.test(ext) ? ext : null;
}

export interface ArtifactMeta {
  filename: string;
  platform: string;
  arch: string;
  filetype: string;
  /** Expected SHA-256 (hex, lower-case) of the upload; a different one refuses it. */
  sha256?: string;
}

/** The upload's query parameters checked: InvalidRequest naming each bad field. */
export function parseArtifactMeta(input: { filename?: string; platform?: string; arch?: string; filetype?: string; sha256?: string }): ArtifactMeta {
  const fields: Record<string, string> = {};
  const filename = input.filename ?? '';
  const problem = filenameProblem(filename);
  if (problem) fields.filename = `The file name ${problem}.`;
  const platform = (input.platform ?? '').trim();
  if (!PLATFORM_PATTERN.test(platform)) fields.platform = 'Give a platform such as win32, darwin or linux (lower-case letters, digits, - and _; at most 32).';
  const arch = (input.arch ?? '').trim();
  if (!PLATFORM_PATTERN.test(arch)) fields.arch = 'Give an architecture such as x64, arm64 or universal (lower-case letters, digits, - and _; at most 32).';
  const filetype = input.filetype?.trim() || (problem ? null : filetypeOf(filename));
  if (!filetype || !FILETYPE_PATTERN.test(filetype)) fields.filetype = 'Give the file type (exe, dmg, AppImage, tar.gz…): the file name has no extension to take it from.';
  const sha256 = input.sha256?.trim().toLowerCase();
  if (sha256 !== undefined && sha256 !== '' && !/^[0-9a-f]{64}$/.test(sha256)) fields.sha256 = 'The expected SHA-256 must be 64 hexadecimal digits.';
  if (Object.keys(fields).length) throw new AppError('InvalidRequest', `Invalid artifact: ${Object.values(fields).join(' ')}`, { fields });
  return { filename, platform, arch, filetype: filetype!, sha256: sha256 || undefined };
}

/** What an artifact's signature states (docs/integrate/releases.md "Verifying an artifact"). */
export interface ArtifactStatement {
  typ: 'keyforge.artifact';
  iss: string;
  /** The product's id. */
  product: string;
  /** The product's name (what SDKs know their product by, as offline tokens' `product` claim). */
  productName: string;
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
}
