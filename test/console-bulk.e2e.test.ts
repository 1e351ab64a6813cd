import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chooseOption, type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';

// The licenses page's Export CSV and Bulk action in Chromium against the real server (its own job worker runs
// the bulk job): the download holds the filtered licenses; the confirmation states the count; the progress
// reaches the end; the list shows the result; at 1280 px and on a 375 px phone.

const chromiumNeed = needChromium();
let app: ConsoleE2e;
reportServerOnFailure(() => app);
let page: Page;
/** The page under a loaded machine: retried for up to 20 s (vitest's default is 1 s). */
const poll = <T>(read: () => T | Promise<T>, timeout = 20_000) => expect.poll(read, { timeout });

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  app = await startConsoleE2e('bulk', chromiumNeed.path);
  page = await app.newPage(1280, { acceptDownloads: true });
  const { createProduct } = await app.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Studio' } });
  for (let i = 1; i <= 6; i++) {
    const customerEmail = i <= 4 ? `team${i}@bulk.example` : `other${i}@other.example`;
    await app.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key } }', { input: { productId: createProduct.product.id, maxActivations: 2, customerEmail } });
  }
}, 300_000);
afterAll(() => app?.stop());

describeWith(chromiumNeed)('licenses page: export and bulk actions in Chromium', () => {
  it('signs in and exports the searched licenses as a CSV download', async () => {
    await signInAsAdmin(page);
    await page.goto('/licenses');
    await poll(() => page.getByTestId('license-row').count()).toBe(6);
    await page.getByLabel('Search').fill('bulk.example');
    await poll(() => page.getByTestId('license-row').count()).toBe(4);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^licenses-\d{4}-\d\d-\d\d\.csv$/);
    const rows = parse(readFileSync((await download.path())!, 'utf8'), { columns: true }) as { customer_email: string; status: string }[];
    expect(rows.map((row) => row.customer_email).sort()).toEqual(['team1@bulk.example', 'team2@bulk.example', 'team3@bulk.example', 'team4@bulk.example']);
  });

  it('suspends the licenses matching the search after a confirmation stating how many, and follows the job to its end', async () => {
    await page.getByRole('button', { name: /^Bulk action/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Bulk action' });
    await dialog.getByText('Every license matching the current filters').waitFor();
    await poll(() => dialog.getByTestId('bulk-confirmation').textContent()).toMatch(/^This will suspend 4 licenses\./);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'bulk-01-confirm.png'), fullPage: true });
    await dialog.getByRole('button', { name: 'Suspend 4 licenses' }).click();
    await poll(() => dialog.getByTestId('bulk-progress').textContent(), 60_000).toMatch(/Finished: 4 licenses done, 0 could not be changed/);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'bulk-02-finished.png'), fullPage: true });
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await poll(async () => (await page.getByTestId('license-row').allTextContents()).filter((text) => /suspended/i.test(text)).length).toBe(4);
  });

  it('transfers two selected rows; a phone shows the dialog within the screen', async () => {
    await page.getByLabel('Search').fill('');
    await poll(() => page.getByTestId('license-row').count()).toBe(6);
    const rows = page.getByTestId('license-row');
    await rows.nth(0).getByRole('checkbox', { name: /^Select record/ }).check();
    await rows.nth(1).getByRole('checkbox', { name: /^Select record/ }).check();
    await page.setViewportSize({ width: 375, height: 812 });
    await page.getByRole('button', { name: 'Bulk action (2 selected)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Bulk action' });
    await chooseOption(page, dialog.getByLabel('Action'), 'Transfer');
    await dialog.getByLabel('New customer email').fill('new-owner@example.com');
    await poll(() => dialog.getByTestId('bulk-confirmation').textContent()).toMatch(/^This will transfer 2 licenses\./);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'bulk-03-phone.png'), fullPage: true });
    await dialog.getByRole('button', { name: 'Transfer 2 licenses' }).click();
    await poll(() => dialog.getByTestId('bulk-progress').textContent(), 60_000).toMatch(/Finished: 2 licenses done/);
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await poll(async () => (await page.getByTestId('license-row').allTextContents()).filter((text) => text.includes('new-owner@example.com')).length).toBe(2);
    // A selection belongs to the list it was made in: another search starts with none ticked.
    await page.getByTestId('license-row').nth(0).getByRole('checkbox', { name: /^Select record/ }).check();
    await page.getByRole('button', { name: 'Bulk action (1 selected)' }).waitFor();
    await page.getByLabel('Search').fill('other');
    await page.getByRole('button', { name: 'Bulk action', exact: true }).waitFor();
    expect(app.errors).toEqual([]);
  });
});
