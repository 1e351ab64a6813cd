import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS_PAGE, maxOf, renderLimitsPage } from '../docs/scripts/limits-reference.js';
import { MAX_PUBLIC_BODY_BYTES } from '../server/src/http/public-api.js';
import { describeEnvironment } from '../server/src/config.js';
import { MAX_PAGE_SIZE } from '../server/src/services/listing.js';
import { LicenseAttributesObject, MAX_SEATS } from '../server/src/services/licenses/attributes.js';
import { TenantInputSchema } from '../server/src/services/tenants.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

/**
 * docs/reference/limits.md is generated from the constants, schemas and setting defaults that enforce each limit
 * (docs/scripts/limits-reference.ts): the committed page is what they give, and a few of the documented values are
 * tried against the running server, so the page and the server cannot disagree.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow() });
});
afterAll(async () => {
  await t?.close();
});

describe('the limits reference', () => {
  it('is not stale (run `pnpm docs:generate` after changing a limit)', () => {
    expect(readFileSync(LIMITS_PAGE, 'utf8')).toBe(renderLimitsPage());
  });

  it('lists every RATE_LIMIT_* setting with its default', () => {
    const page = readFileSync(LIMITS_PAGE, 'utf8');
    const rateLimits = describeEnvironment().filter((variable) => variable.name.startsWith('RATE_LIMIT_'));
    expect(rateLimits.length).toBeGreaterThan(3);
    for (const variable of rateLimits) expect(page).toContain(`| \`${variable.name}\` | ${Number(variable.default).toLocaleString('en-US')} / min |`);
  });

  it('reads a maximum through optional and nullable wrappers, for strings, numbers and arrays', () => {
    expect(maxOf(TenantInputSchema.shape.name)).toBe(200);
    expect(maxOf(LicenseAttributesObject.shape.floatingSeats)).toBe(MAX_SEATS);
    expect(maxOf(LicenseAttributesObject.shape.features)).toBe(100);
    expect(() => maxOf(TenantInputSchema.shape.keyPrefix)).toThrow(/no maximum/);
  });

  it('the server refuses a licensing body one byte over the documented size, and not one at it', async () => {
    expect(readFileSync(LIMITS_PAGE, 'utf8')).toContain(`| Licensing API (\`/api/v1/*\`) | ${MAX_PUBLIC_BODY_BYTES / 1024} KiB`);
    const body = (size: number) => {
      const text = JSON.stringify({ licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA', padding: '' });
      return text.replace('"padding":""', `"padding":"${'x'.repeat(size - text.length)}"`);
    };
    const over = await t.request('POST', '/api/v1/validate', body(MAX_PUBLIC_BODY_BYTES + 1));
    expect(over.status).toBe(400);
    expect(over.json.error.code).toBe('InvalidRequest');
    const at = await t.request('POST', '/api/v1/validate', body(MAX_PUBLIC_BODY_BYTES));
    // At the limit the body is read: refused (if at all) for its content, not its size.
    expect(at.json?.error?.message ?? '').not.toMatch(/larger than/);
  });

  it('the server refuses a page one larger than the documented page size', async () => {
    expect(readFileSync(LIMITS_PAGE, 'utf8')).toContain(`| Page size (\`first\`) | ${MAX_PAGE_SIZE} `);
    const { token } = await t.setupAdmin();
    const answer = (first: number) => t.gql('query($first: Int) { products(first: $first) { nodes { id } } }', { first }, { token });
    expect((await answer(MAX_PAGE_SIZE)).errors).toBeUndefined();
    expect((await answer(MAX_PAGE_SIZE + 1)).errors?.[0].extensions?.code).toBe('InvalidRequest');
  });
});
