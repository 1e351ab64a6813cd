import { AppError } from '../../domain/errors.js';
import { findUnstorableString } from '../validation.js';

/**
 * The text forms of license files, activation requests and deactivation proofs (docs/integrate/license-files.md):
 * a `-----BEGIN KEYFORGE <LABEL>-----` line, the payload in standard base64 wrapped at 64 characters, and the END
 * line. It survives email, chat and copy-paste: readers ignore white space, carriage returns, indentation, text
 * before BEGIN and after END (a mail client's quote markers `>` too). An activation request also has a one-line
 * form for QR codes (`KFREQ1:` + base64url), which `readArmor` accepts as well.
 */
export type ArmorLabel = 'LICENSE FILE' | 'ACTIVATION REQUEST' | 'DEACTIVATION PROOF';

/** Longest text accepted (characters), checked before anything else: far above any real file, below any abuse. */
export const MAX_ARMORED_CHARS = 16_384;

export const COMPACT_REQUEST_PREFIX = 'KFREQ1:';

const LINE = 64;

export function armor(label: ArmorLabel, payload: Buffer): string {
  const body = payload.toString('base64');
  const lines: string[] = [];
  for (let at = 0; at < body.length; at += LINE) lines.push(body.slice(at, at + LINE));
  return `-----BEGIN KEYFORGE ${label}-----\n${lines.join('\n')}\n-----END KEYFORGE ${label}-----\n`;
}

const invalid = (field: string, message: string) => new AppError('InvalidRequest', message, { fields: { [field]: message } });

/** The payload of armored text of this label; InvalidRequest (naming `field`) for anything else. Linear in the input. */
export function readArmor(label: ArmorLabel, text: unknown, field: string): Buffer {
  const what = label.toLowerCase();
  if (typeof text !== 'string' || !text.trim()) throw invalid(field, `Paste the ${what} (the text from -----BEGIN KEYFORGE ${label}----- to its END line).`);
  if (text.length > MAX_ARMORED_CHARS) throw invalid(field, `This is longer than any ${what} (${MAX_ARMORED_CHARS} characters at most).`);
  const trimmed = text.trim();
  if (label === 'ACTIVATION REQUEST' && trimmed.startsWith(COMPACT_REQUEST_PREFIX)) {
    const compact = trimmed.slice(COMPACT_REQUEST_PREFIX.length);
    if (!/^[A-Za-z0-9_-]+$/.test(compact)) throw invalid(field, 'The compact activation request is damaged: it must be KFREQ1: followed by base64url only.');
    return Buffer.from(compact, 'base64url');
  }
  const begin = `-----BEGIN KEYFORGE ${label}-----`;
  const end = `-----END KEYFORGE ${label}-----`;
  const from = text.indexOf(begin);
  const to = from < 0 ? -1 : text.indexOf(end, from + begin.length);
  if (from < 0 || to < 0) {
    const other = /-----BEGIN KEYFORGE ([A-Z ]{1,40})-----/.exec(text)?.[1];
    throw invalid(field, other && other !== label ? `This is a ${other.toLowerCase()}, not a ${what}.` : `This is not a whole ${what}: its BEGIN and END lines must both be there.`);
  }
  // Mail clients quote with "> " at the start of lines; every other character but base64's is dropped as white space.
  const body = text.slice(from + begin.length, to).replace(/^[ \t]*(?:>[ \t]*)+/gm, '').replace(/\s+/g, '');
  if (!body || !/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) throw invalid(field, `The ${what} is damaged (its base64 lines were changed or cut short): copy it again whole.`);
  return Buffer.from(body, 'base64');
}

/** The JSON object a payload holds; InvalidRequest when it is not one. */
export function readJsonObject(payload: Buffer, field: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    throw invalid(field, `The ${what} is damaged: its content is not readable.`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid(field, `The ${what} is damaged: its content is not readable.`);
  // A NUL or a lone surrogate cannot be stored (a device name, an id): refused here, before any lookup or write.
  if (findUnstorableString(parsed)) throw invalid(field, `The ${what} is damaged: it holds characters that cannot be stored (NUL or an unpaired surrogate).`);
  return parsed as Record<string, unknown>;
}

export { invalid as invalidArmoredInput };
