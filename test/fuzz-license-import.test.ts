import fc from 'fast-check';
import { expect, it } from 'vitest';
import { runBulkJobs } from '../server/src/services/licenses/bulk.js';
import { IMPORT_COLUMNS } from '../server/src/services/licenses/import.js';
import { FUZZ_TIMEOUT_MS, GRAPHQL_RUNS, useFuzzTarget } from './support/fuzz-graphql.js';
import { hostileString } from './support/hostile.js';

// Hostile CSV bodies for the license import (docs/integrate/management-api.md "Importing licenses from CSV"): headers from the real columns
// and garbage, cells mixing valid-looking values with quotes, separators, line breaks, NULs and lone surrogates.
// Neither the dry run nor the start answers a server error, and every import a file starts finishes.

let productName: string;
const fuzz = useFuzzTarget(async (target) => {
  productName = (await target.t.prisma.product.findUniqueOrThrow({ where: { id: target.product.id } })).name;
});

const RUNS = Math.max(50, Math.floor(GRAPHQL_RUNS / 4));
const column = fc.oneof(fc.constantFrom(...IMPORT_COLUMNS, 'custom.plan', 'custom:region', 'id', 'status', 'Customer Email'), hostileString, fc.string({ maxLength: 12 }));

const cell = () =>
  fc.oneof(
    { arbitrary: fc.constantFrom('', '1', '3', '0', '-1', 'true', 'no', '2027-01-31', '2027-01-31T12:00:00Z', '99999-01-01', 'a@b.test', '["pro"]', '{"plan":"pro"}', 'pro;sync', 'ACME-2345-6789-ABCD-EFGH', '1.2.3', '=cmd()'), weight: 4 },
    { arbitrary: fc.constant('PRODUCT'), weight: 2 },
    { arbitrary: fc.string({ maxLength: 30, unit: 'binary' }), weight: 2 },
    { arbitrary: hostileString, weight: 1 },
  );
/** One cell as CSV writes it: bare, or quoted with quotes doubled, or broken on purpose. */
const written = fc.tuple(cell(), fc.constantFrom('bare', 'quoted', 'quoted', 'broken')).map(([value, style]) =>
  style === 'bare' ? value : style === 'quoted' ? `"${value.replaceAll('"', '""')}"` : `"${value}`,
);
const body = fc
  .tuple(fc.array(column, { minLength: 0, maxLength: 8 }), fc.array(fc.array(written, { maxLength: 9 }), { maxLength: 6 }), fc.constantFrom('\n', '\r\n', '\r'), fc.boolean())
  .map(([header, rows, newline, bom]) => (bom ? '\ufeff' : '') + [header.join(','), ...rows.map((row) => row.join(','))].join(newline).replaceAll('PRODUCT', productName));
/** Mostly well-formed files of the real columns, so that many reach the job. */
const plausible = fc
  .array(fc.tuple(fc.constantFrom('1', '2', '', 'x'), fc.constantFrom('', '2027-01-31', 'nope'), cell()), { minLength: 1, maxLength: 5 })
  .map((rows) => ['product,seats,expires_at,notes', ...rows.map(([seats, expiry, notes]) => `${productName},${seats},${expiry},"${notes.replaceAll('"', '""')}"`)].join('\n'));

const CHECK = 'mutation($input: CheckLicenseImportInput!) { checkLicenseImport(input: $input) { report { rows valid errorCount errors { line column message } } } }';
const START = 'mutation($input: StartLicenseImportInput!) { startLicenseImport(input: $input) { job { id total } } }';

it(`hostile CSV bodies: no server error from the dry run or the start, and every started import finishes (${RUNS} runs)`, async () => {
  const started: string[] = [];
  await fc.assert(
    fc.asyncProperty(fc.oneof(body, plausible), async (csv) => {
      for (const query of [CHECK, START]) {
        const response = await fuzz.t.gql(query, { input: { csv } }, fuzz.auth);
        const detail = `${JSON.stringify(csv).slice(0, 300)} → ${response.text.slice(0, 300)}`;
        expect(response.status, detail).toBeLessThan(500);
        for (const error of response.errors ?? []) expect(error.extensions?.code, detail).not.toBe('InternalError');
        if (query === CHECK && response.data) {
          const { report } = response.data.checkLicenseImport;
          // Every error names a line of the file.
          for (const error of report.errors) expect(error.line, detail).toBeGreaterThanOrEqual(1);
        }
        if (query === START && response.data) started.push(response.data.startLicenseImport.job.id);
      }
    }),
    { numRuns: RUNS },
  );
  expect(started.length).toBeGreaterThan(0);
  await runBulkJobs({ db: fuzz.t.deps.db, now: new Date() });
  const unfinished = await fuzz.t.prisma.bulkJob.count({ where: { id: { in: started }, finishedAt: null } });
  expect(unfinished).toBe(0);
}, FUZZ_TIMEOUT_MS);
