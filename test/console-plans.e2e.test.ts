import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chooseOption, type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';

// The products page's Plans section and a license sold from a plan, in Chromium against the real server: the plan
// created in the dialog, a license created from it on the licenses page (only the customer asked for), the
// license holding the plan's values, the list filtered by the plan.

const chromiumNeed = needChromium();
let app: ConsoleE2e;
reportServerOnFailure(() => app);
let page: Page;
/** The page under a loaded machine: retried for up to 20 s (vitest's default is 1 s). */
const poll = <T>(read: () => T | Promise<T>, timeout = 20_000) => expect.poll(read, { timeout });

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  app = await startConsoleE2e('plans', chromiumNeed.path);
  page = await app.newPage(1280);
  await app.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Studio' } });
}, 300_000);
afterAll(() => app?.stop());

describeWith(chromiumNeed)('plans in Chromium', () => {
  it('creates a plan on the products page', async () => {
    await signInAsAdmin(page);
    await page.goto('/products');
    await page.getByText('No plans yet').waitFor();
    await page.getByRole('button', { name: 'New plan' }).click();
    const dialog = page.getByRole('dialog', { name: 'New plan' });
    await chooseOption(page, dialog.getByLabel(/^Product/), 'Acme Studio');
    await dialog.getByLabel(/^Name/).fill('Pro yearly');
    await dialog.getByLabel(/^Duration/).fill('P1Y');
    await dialog.getByLabel(/^Devices/).fill('3');
    await dialog.getByRole('button', { name: 'Create plan' }).click();
    const row = page.getByTestId('plan-row').filter({ hasText: 'Pro yearly' });
    await row.waitFor();
    expect(await row.textContent()).toContain('1 year');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'plans-01-created.png'), fullPage: true });
  });

  it('creates a license from the plan: the key is shown once, the license has the plan\'s values', async () => {
    await page.goto('/licenses');
    await page.getByRole('button', { name: 'New license' }).click();
    const dialog = page.getByRole('dialog', { name: 'New license' });
    await chooseOption(page, dialog.getByLabel('From a plan'), 'Acme Studio: Pro yearly');
    await dialog.getByLabel('Customer email').fill('buyer@plans.example');
    await dialog.getByRole('button', { name: 'Create license' }).click();
    const secret = page.getByTestId('secret-value');
    await secret.waitFor();
    expect((await secret.textContent())!.trim()).toMatch(/^ACME(-[A-Z0-9]{4}){4}$/);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'plans-02-license.png'), fullPage: true });
    const { licenses } = await app.gql('query { licenses { nodes { maxActivations expiresAt customerEmail plan { name } } } }', {});
    expect(licenses.nodes).toHaveLength(1);
    expect(licenses.nodes[0]).toMatchObject({ maxActivations: 3, customerEmail: 'buyer@plans.example', plan: { name: 'Pro yearly' } });
    const years = (Date.parse(licenses.nodes[0].expiresAt) - Date.now()) / (365 * 86_400_000);
    expect(years).toBeGreaterThan(0.99);
    expect(years).toBeLessThan(1.01);
  });

  it('the plan row links to its licenses (the list filtered by plan)', async () => {
    await page.goto('/products');
    await page.getByTestId('plan-row').filter({ hasText: 'Pro yearly' }).getByRole('link', { name: '1' }).click();
    await poll(() => page.getByTestId('license-row').count()).toBe(1);
    expect(new URL(page.url()).searchParams.get('plan')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
