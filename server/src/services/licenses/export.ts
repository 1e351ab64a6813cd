import type { Prisma } from '../../generated/prisma/client.js';
import { requireMember } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { parseInput } from '../validation.js';
import { licenseWhere, LicenseFilterSchema, type LicenseFilter } from './management.js';
import { licenseStatus } from './predicates.js';

// The license list as CSV (docs/integrate/management-api.md "Exporting licenses as CSV"): the list's filters, newest first, streamed page by
// page so that a million rows cost the memory of one page. Never the key (only its digest is stored).

/** Rows read per query: one page is all the export holds in memory at a time. */
export const EXPORT_PAGE_SIZE = 1_000;

export const EXPORT_COLUMNS = [
  'id', 'key_hint', 'product', 'status', 'customer_email', 'max_activations', 'current_activations', 'expires_at', 'is_trial',
  'node_locked', 'floating_seats', 'features', 'custom_fields', 'min_version', 'max_version', 'maintenance_expires_at',
  'offline_grace_days', 'grace_period_days', 'created_at', 'suspended_at', 'revoked_at',
] as const;

/** A cell a spreadsheet would run as a formula starts with one of these (OWASP "CSV injection"). */
export const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One RFC 4180 cell: quoted when it holds a comma, quote or line break (quotes doubled); a text that a spreadsheet
 * would read as a formula gets a leading apostrophe, which spreadsheets show as text.
 */
export function csvCell(value: string | number | boolean | Date | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = value instanceof Date ? value.toISOString() : String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const csvLine = (cells: readonly (string | number | boolean | Date | null | undefined)[]) => `${cells.map(csvCell).join(',')}\r\n`;

/** Some CSV text and how many licenses it holds (the header: none). */
export interface CsvChunk {
  csv: string;
  rows: number;
}

/**
 * The caller's licenses matching `filterInput` (the list's filter) as CSV text, a header line then one chunk per
 * page. Keyset-paged on (createdAt, id), so each page starts in the index where the last ended, however deep.
 * Any member may export (the console shows the same rows).
 */
export async function* exportLicensesCsv(ctx: ServiceContext, filterInput: LicenseFilter = {}): AsyncGenerator<CsvChunk> {
  const tenantId = requireMember(ctx);
  const where = licenseWhere(ctx, tenantId, parseInput(LicenseFilterSchema, filterInput));
  yield { csv: csvLine(EXPORT_COLUMNS), rows: 0 };
  let after: { createdAt: Date; id: string } | null = null;
  for (;;) {
    // As listing.ts createdAtIdWhere: an index range from the cursor, then the ties on createdAt broken by id.
    const past: Prisma.LicenseWhereInput = after ? { createdAt: { lte: after.createdAt }, OR: [{ createdAt: { lt: after.createdAt } }, { id: { lt: after.id } }] } : {};
    const rows = await ctx.db.prisma.license.findMany({
      where: { AND: [where, past] },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: EXPORT_PAGE_SIZE,
      omit: { keyDigest: true, keyDigestVersion: true, customerEmailLocal: true, customerEmailDomain: true },
      include: { product: { select: { name: true } } },
    });
    if (rows.length === 0) return;
    const csv = rows
      .map((license) =>
        csvLine([
          license.id, license.keyHint, license.product.name, licenseStatus(license, ctx.now), license.customerEmail, license.maxActivations,
          license.currentActivations, license.expiresAt, license.isTrial, license.nodeLocked, license.floatingSeats,
          license.features.length ? JSON.stringify(license.features) : null, license.customFields === null ? null : JSON.stringify(license.customFields),
          license.minVersion, license.maxVersion, license.maintenanceExpiresAt, license.offlineGraceDays, license.gracePeriodDays,
          license.createdAt, license.suspendedAt, license.revokedAt,
        ]),
      )
      .join('');
    yield { csv, rows: rows.length };
    if (rows.length < EXPORT_PAGE_SIZE) return;
    after = rows[rows.length - 1];
  }
}
