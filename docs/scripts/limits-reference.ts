/**
 * Writes docs/reference/limits.md: every limit's value is read from the code that enforces it (a constant, a
 * validation schema's maximum, a setting's default), so the page cannot say one number while the server applies
 * another. Every `RATE_LIMIT_*` setting of the configuration schema is listed without anyone adding it here.
 *   tsx docs/scripts/limits-reference.ts          write the page (run by `pnpm docs:generate`)
 *   tsx docs/scripts/limits-reference.ts --check  exit 1 when the committed page differs (what it does with CI set)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAX_MANAGEMENT_BODY_BYTES } from '../../server/src/app.js';
import { describeEnvironment } from '../../server/src/config.js';
import { IMPORTED_KEY_MAX_LENGTH, IMPORTED_KEY_MIN_LENGTH, KEY_PREFIX_PATTERN } from '../../server/src/crypto/license-key.js';
import { EXPENSIVE_FIELD_COST, QUERY_COST_BUDGET } from '../../server/src/graphql/builder.js';
import { MANAGEMENT_QUERY_LIMITS, PORTAL_QUERY_LIMITS } from '../../server/src/graphql/query-limits.js';
import { MAX_PORTAL_BODY_BYTES } from '../../server/src/http/portal.js';
import { MAX_PUBLIC_BODY_BYTES } from '../../server/src/http/public-api.js';
import { DeviceId, LicenseKey, ProductName, Version } from '../../server/src/rest/v1/schemas.js';
import { EmailSchema, PasswordSchema } from '../../server/src/services/auth/passwords.js';
import { FAILED_LOGIN_WINDOW_MS, LOCK_MS, MAX_FAILED_LOGINS } from '../../server/src/services/auth/lockout.js';
import { HEARTBEAT_INTERVAL_SECONDS, LEASE_SECONDS } from '../../server/src/services/floating/sessions.js';
import { MAX_ARMORED_CHARS } from '../../server/src/services/license-files/armor.js';
import { LicenseAttributesObject, MAX_SEATS } from '../../server/src/services/licenses/attributes.js';
import { MAX_SELECTED } from '../../server/src/services/licenses/bulk.js';
import { MAX_IMPORT_BYTES, MAX_IMPORT_ROWS, MAX_REPORTED_ERRORS } from '../../server/src/services/licenses/import.js';
import { NONCE_TTL_MS } from '../../server/src/services/licenses/nonces.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../server/src/services/listing.js';
import { MAX_BACKDATE_MS, MAX_FUTURE_SKEW_MS, MAX_QUANTITY } from '../../server/src/services/metering/meter.js';
import { EVENT_NAME_MAX_LENGTH } from '../../server/src/services/metering/periods.js';
import { MAX_PAYMENT_BODY_BYTES } from '../../server/src/services/payments/apply.js';
import { MAX_PLAN_QUOTAS } from '../../server/src/services/plans.js';
import { MAX_DEVICES, MAX_LICENSES } from '../../server/src/services/portal/customer.js';
import { LINK_LIFETIME_MS, LINKS_PER_WINDOW } from '../../server/src/services/portal/sign-in.js';
import { ProductInputSchema } from '../../server/src/services/products.js';
import { TenantInputSchema } from '../../server/src/services/tenants.js';
import { MAX_WEBHOOK_ENDPOINTS } from '../../server/src/services/webhooks/endpoints.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const LIMITS_PAGE = path.join(ROOT, 'docs/reference/limits.md');

/** A zod schema's maximum (string length, number, array length), through optional/nullable wrappers. */
export function maxOf(schema: unknown): number {
  let current = schema as { unwrap?: () => unknown; maxLength?: number | null; maxValue?: number; _zod: { def: { type: string; checks?: { _zod: { def: { check: string; maximum?: number } } }[] } } };
  while (current._zod.def.type === 'optional' || current._zod.def.type === 'nullable') current = current.unwrap!() as typeof current;
  if (typeof current.maxLength === 'number') return current.maxLength;
  if (typeof current.maxValue === 'number' && Number.isFinite(current.maxValue)) return current.maxValue;
  const check = current._zod.def.checks?.find((c) => c._zod.def.check === 'max_length' || c._zod.def.check === 'less_than');
  if (check?._zod.def.maximum !== undefined) return check._zod.def.maximum;
  throw new Error(`no maximum on a ${current._zod.def.type} schema`);
}

const number = (value: number) => value.toLocaleString('en-US');
const bytes = (value: number) => (value % 1024 === 0 ? `${number(value / 1024)} KiB (${number(value)} bytes)` : `${number(value)} bytes`);
const minutes = (ms: number) => `${number(ms / 60_000)} min`;
const days = (ms: number) => `${number(ms / 86_400_000)} days`;
const chars = (value: number) => `${number(value)} characters`;

export interface Limit {
  limit: string;
  value: string;
  note: string;
}

export interface LimitSection {
  title: string;
  intro: string;
  rows: Limit[];
}

export function limitSections(): LimitSection[] {
  const env = describeEnvironment();
  const rateLimits = env.filter((variable) => variable.name.startsWith('RATE_LIMIT_'));
  const attributes = LicenseAttributesObject.shape;
  const featureItem = (attributes.features.unwrap() as unknown as { element: unknown }).element;
  const customFields = attributes.customFields.unwrap().unwrap() as unknown as { keyType: unknown; valueType: unknown };
  return [
    {
      title: 'Rate limits',
      intro:
        'Per minute, counted in memory per process or, with `REDIS_URL`, across all processes. Beyond a limit the answer is 429 `RateLimited` with `Retry-After`; `RateLimit-Limit/Remaining/Reset` headers come with every `/api/v1` answer counted against the client address. Behind a proxy, `TRUST_PROXY` decides which address is the client\'s ([Troubleshooting](/guide/troubleshooting#many-429-ratelimited-behind-a-proxy-or-load-balancer)). Each is a setting ([Configuration](/operate/configuration)); the value shown is its default.',
      rows: [
        ...rateLimits.map((variable) => ({ limit: `\`${variable.name}\``, value: `${number(Number(variable.default))} / min`, note: variable.description ?? '' })),
        { limit: 'Failed sign-ins before a lockout', value: `${MAX_FAILED_LOGINS} in ${minutes(FAILED_LOGIN_WINDOW_MS)}`, note: `Then the account is locked for ${minutes(LOCK_MS)} (\`AccountLocked\`); a right password never counts.` },
        { limit: 'Portal sign-in links', value: `${LINKS_PER_WINDOW} per ${minutes(LINK_LIFETIME_MS)}`, note: 'Per email address and company; further requests answer the same and send nothing.' },
      ],
    },
    {
      title: 'Request bodies',
      intro: 'A larger body is refused with 400 `InvalidRequest` before it is read further.',
      rows: [
        { limit: 'Licensing API (`/api/v1/*`)', value: bytes(MAX_PUBLIC_BODY_BYTES), note: 'JSON only (`Content-Type: application/json`).' },
        { limit: 'Payment provider webhooks', value: bytes(MAX_PAYMENT_BODY_BYTES), note: '`POST /api/v1/payments/<connectionId>/webhook`.' },
        { limit: 'Management API (`/api/graphql`, `/api/*`)', value: bytes(MAX_MANAGEMENT_BODY_BYTES), note: 'A CSV import travels inside it (below).' },
        { limit: 'Customer portal (`/portal/<handle>/graphql`)', value: bytes(MAX_PORTAL_BODY_BYTES), note: '' },
        { limit: 'Armored license file, activation request or deactivation proof', value: chars(MAX_ARMORED_CHARS), note: 'The text pasted into the console or the portal, or posted.' },
      ],
    },
    {
      title: 'GraphQL queries',
      intro: 'A query past one of these is refused before it runs (HTTP 200, an error in `errors` whose message names the limit; [Error codes](/reference/errors#http-errors-and-graphql-extensions-code)).',
      rows: [
        { limit: 'Depth', value: `${MANAGEMENT_QUERY_LIMITS.maxDepth} (portal: ${PORTAL_QUERY_LIMITS.maxDepth})`, note: '' },
        { limit: 'Aliases', value: `${MANAGEMENT_QUERY_LIMITS.maxAliases} (portal: ${PORTAL_QUERY_LIMITS.maxAliases})`, note: '' },
        { limit: 'Directives', value: `${MANAGEMENT_QUERY_LIMITS.maxDirectives} (portal: ${PORTAL_QUERY_LIMITS.maxDirectives})`, note: '' },
        { limit: 'Tokens', value: `${number(MANAGEMENT_QUERY_LIMITS.maxTokens)} (portal: ${number(PORTAL_QUERY_LIMITS.maxTokens)})`, note: '' },
        { limit: 'Cost (graphql-armor)', value: `${number(MANAGEMENT_QUERY_LIMITS.maxCost)} (portal: ${number(PORTAL_QUERY_LIMITS.maxCost)})`, note: '' },
        { limit: 'Expensive fields (totals, analytics)', value: `${number(QUERY_COST_BUDGET)} per query`, note: `Each costs ${number(EXPENSIVE_FIELD_COST)}: at most ${Math.floor(QUERY_COST_BUDGET / EXPENSIVE_FIELD_COST)} per query.` },
        { limit: 'Page size (`first`)', value: `${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`, note: 'Every connection; page on with `after`.' },
      ],
    },
    {
      title: 'Imports, exports and bulk actions',
      intro: '',
      rows: [
        { limit: 'CSV import size', value: bytes(MAX_IMPORT_BYTES), note: 'Larger files: split them.' },
        { limit: 'CSV import rows', value: number(MAX_IMPORT_ROWS), note: '' },
        { limit: 'Errors reported by an import\'s dry run', value: number(MAX_REPORTED_ERRORS), note: 'The first ones; fix them and check again.' },
        { limit: 'Licenses selected for a bulk action', value: number(MAX_SELECTED), note: '' },
      ],
    },
    {
      title: 'Keys and fields',
      intro: 'Longer or larger values are refused with `InvalidRequest` naming the field.',
      rows: [
        { limit: 'License key (as sent)', value: chars(maxOf(LicenseKey)), note: 'The longest key with white space around it. Keyforge\'s own keys are `PREFIX-XXXX-XXXX-XXXX-XXXX` (case and white space ignored).' },
        {
          limit: 'Imported license key',
          value: `${number(IMPORTED_KEY_MIN_LENGTH)}–${chars(IMPORTED_KEY_MAX_LENGTH)}`,
          note: 'A product with `allowImportedKeys`: a key issued by another service, of printable ASCII (0x21–0x7E) without white space or control characters, compared case-sensitively once the white space around it is trimmed ([Imported keys](/integrate/rest-api#imported-keys-any-format)).',
        },
        { limit: 'Key prefix', value: `\`${KEY_PREFIX_PATTERN.source}\``, note: '2–12 letters or digits, starting with a letter.' },
        { limit: '`deviceId`', value: chars(maxOf(DeviceId)), note: '' },
        { limit: '`version` (sent by the application)', value: chars(maxOf(Version)), note: 'A semantic version.' },
        { limit: 'Product name', value: chars(maxOf(ProductInputSchema.shape.name)), note: `A bundle has up to ${maxOf(ProductInputSchema.shape.bundleOf)} members. The \`product\` of activate and floating checkout: names of up to ${chars(maxOf(ProductName))}.` },
        { limit: 'Company name', value: chars(maxOf(TenantInputSchema.shape.name)), note: '' },
        { limit: 'Email address', value: chars(maxOf(EmailSchema.in)), note: '' },
        { limit: 'Password', value: `${PasswordSchema.minLength}–${maxOf(PasswordSchema)} characters`, note: '' },
        { limit: 'License features', value: `${maxOf(attributes.features)} of ${chars(maxOf(featureItem))}`, note: '' },
        { limit: 'License custom fields', value: `names of ${chars(maxOf(customFields.keyType))}, values of ${chars(maxOf(customFields.valueType))}`, note: '' },
        { limit: '`maxActivations`, `floatingSeats`', value: number(MAX_SEATS), note: '' },
        { limit: 'Quotas per plan', value: number(MAX_PLAN_QUOTAS), note: '' },
        { limit: 'Metering event name', value: chars(EVENT_NAME_MAX_LENGTH), note: '' },
        { limit: 'Metering quantity per call', value: number(MAX_QUANTITY), note: `\`timestamp\` at most ${minutes(MAX_FUTURE_SKEW_MS)} ahead and ${days(MAX_BACKDATE_MS)} back.` },
        { limit: 'Webhook endpoints per company', value: number(MAX_WEBHOOK_ENDPOINTS), note: '' },
      ],
    },
    {
      title: 'Lifetimes',
      intro: '',
      rows: [
        { limit: 'Activation nonce', value: minutes(NONCE_TTL_MS), note: 'Single use.' },
        { limit: 'Floating seat lease', value: `${LEASE_SECONDS} s`, note: `Renewed by a heartbeat every ${HEARTBEAT_INTERVAL_SECONDS} s; a lease not renewed frees its seat.` },
        { limit: 'Licenses and devices the portal lists per customer', value: `${MAX_LICENSES} and ${MAX_DEVICES}`, note: '' },
      ],
    },
  ];
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderLimitsPage(): string {
  const sections = limitSections().map(
    (section) => `## ${section.title}

${section.intro ? `${section.intro}\n\n` : ''}| Limit | Value | |
|---|---|---|
${section.rows.map((row) => `| ${cell(row.limit)} | ${cell(row.value)} | ${cell(row.note)} |`).join('\n')}
`,
  );
  return `<!-- Generated by docs/scripts/limits-reference.ts from the constants, schemas and setting defaults that enforce each limit: change those, not this file. -->

# Limits

Every limit the server enforces, with the value it enforces (read from the code when this page is generated). A value
named by a setting is its default: see [Configuration](/operate/configuration). What a refusal looks like:
[Error codes](/reference/errors).

${sections.join('\n')}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const page = renderLimitsPage();
  if (process.argv.includes('--check') || process.env.CI) {
    let committed = '';
    try {
      committed = readFileSync(LIMITS_PAGE, 'utf8');
    } catch {}
    if (committed !== page) {
      console.error('docs/reference/limits.md is stale: run `tsx docs/scripts/limits-reference.ts` and commit it');
      process.exit(1);
    }
  } else {
    writeFileSync(LIMITS_PAGE, page);
  }
}
