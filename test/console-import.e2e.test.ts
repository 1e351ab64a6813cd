import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { buildKeygenAccount, fixtureLists, keygenPage } from './support/keygen-fixture.js';
import { describeWith, needChromium } from './support/optional.js';
import { postJson } from './support/processes.js';

// The licenses page's Import CSV in Chromium against the real server (its own job worker runs the import): the
// dry run's errors by line and column, the corrected file imported with its progress to the end, the generated
// keys downloaded once (and valid), the list showing the new licenses; the dialog on a 375 px phone. Then its From
// Keygen tab: a small Keygen account's saved pages previewed (nothing written), imported, and imported again (nothing
// created twice).

const chromiumNeed = needChromium();
let app: ConsoleE2e;
reportServerOnFailure(() => app);
let page: Page;
/** An expiry a year from the run: the imported keys are validated against the server's wall clock. */
const NEXT_YEAR = new Date(Date.now() + 365 * 86_400_000).toISOString().slice(0, 10);
const HEADER = 'product,key,customer_email,seats,expires_at,features,custom.plan,notes';
/** Imported once, then again (every row skipped: the same file). */
const GOOD_CSV = [HEADER, `Acme Studio,,one@import.example,2,${NEXT_YEAR},pro;sync,pro,moved`, 'Acme Studio,,two@import.example,1,,,,', 'Acme Studio,ACME-2345-6789-ABCD-EFGH,three@import.example,1,,,,'].join('\n');
const poll = <T>(read: () => T | Promise<T>, timeout = 20_000) => expect.poll(read, { timeout });
/** Picks a file in the dialog's CSV file input (Mantine's FileInput is a button opening the file chooser). */
async function chooseCsv(dialog: ReturnType<Page['getByRole']>, name: string, text: string) {
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), dialog.getByLabel('CSV file').click()]);
  await chooser.setFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
}

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  app = await startConsoleE2e('import', chromiumNeed.path);
  page = await app.newPage(1280, { acceptDownloads: true });
  await app.gql('mutation { createProduct(input: { name: "Acme Studio" }) { product { id } } }', {});
}, 300_000);
afterAll(() => app?.stop());

describeWith(chromiumNeed)('licenses page: import from CSV in Chromium', () => {
  it('shows the dry run errors by line and column, imports the fixed file with progress, and downloads the generated keys once', async () => {
    await signInAsAdmin(page);
    await page.goto('/licenses');
    await page.locator('#main').getByRole('button', { name: 'Import', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Import licenses' });

    const bad = [HEADER, `Acme Studio,,one@import.example,2,${NEXT_YEAR},pro;sync,pro,`, 'Acme Studio,,two@import.example,zero,2027-02-30,,,', 'Nope,ACME-1,,1,,,,'].join('\n');
    await chooseCsv(dialog, 'bad.csv', bad);
    await poll(() => dialog.getByTestId('import-summary').textContent()).toMatch(/^1 row of 3 valid; 4 errors to fix first/);
    const errors = await dialog.getByTestId('import-errors').locator('tbody tr').allTextContents();
    expect(errors).toEqual([
      expect.stringMatching(/^3seatsmust be a whole number$/),
      expect.stringMatching(/^3expires_atis not a real date$/),
      expect.stringMatching(/^4productno product named "Nope"$/),
      expect.stringMatching(/^4keymust be a license key like ACME-/),
    ]);
    expect(await dialog.getByRole('button', { name: 'Import', exact: true }).isDisabled()).toBe(true);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'import-01-errors.png'), fullPage: true });

    await chooseCsv(dialog, 'good.csv', GOOD_CSV);
    await poll(() => dialog.getByTestId('import-summary').textContent()).toMatch(/^3 rows, all valid/);
    await dialog.getByRole('button', { name: 'Import 3 licenses' }).click();
    await poll(() => dialog.getByTestId('import-progress').textContent(), 60_000).toMatch(/Finished: 3 licenses created, 0 imported before \(skipped\), 0 failed/);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'import-02-finished.png'), fullPage: true });

    const [download] = await Promise.all([page.waitForEvent('download'), dialog.getByRole('button', { name: 'Download 2 keys (once)' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^license-keys-\d{4}-\d\d-\d\d\.csv$/);
    const keys = parse(readFileSync((await download.path())!, 'utf8'), { columns: true }) as { line: string; key: string }[];
    expect(keys.map((row) => row.line)).toEqual(['2', '3']);
    for (const { key } of keys) expect((await postJson(`${app.server.url}/api/v1/validate`, { licenseKey: key })).json).toMatchObject({ isValid: true, productName: 'Acme Studio' });
    // Once: the button is gone, and the server has no key left to give.
    await dialog.getByText('The keys were downloaded: they are not shown again.').waitFor();
    expect(await dialog.getByRole('button', { name: /^Download/ }).count()).toBe(0);
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await poll(() => page.getByTestId('license-row').count()).toBe(3);
  });

  it('on a phone, importing the same file again skips every row and the dialog fits the screen', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.locator('#main').getByRole('button', { name: 'Import', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Import licenses' });
    await chooseCsv(dialog, 'good.csv', GOOD_CSV);
    await poll(() => dialog.getByTestId('import-summary').textContent()).toMatch(/3 rows were imported before from this file and will be skipped/);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'import-03-phone.png'), fullPage: true });
    await dialog.getByRole('button', { name: 'Import', exact: true }).click();
    await poll(() => dialog.getByTestId('import-progress').textContent(), 60_000).toMatch(/Finished: 0 licenses created, 3 imported before \(skipped\)/);
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await poll(() => page.getByTestId('license-row').count()).toBe(3);
    expect(app.errors).toEqual([]);
  });
});

describeWith(chromiumNeed)('licenses page: import from Keygen in Chromium', () => {
  it('previews a Keygen account (nothing written), imports it, and a second import creates nothing', async () => {
    const account = buildKeygenAccount({ products: 1, policies: 2, licenses: 10, machines: 10, seed: 46 });
    // Several saved pages (3 resources a page), as a migrating customer has them: the browser builds the bundle.
    const files = [...fixtureLists(account)].flatMap(([list, items]) =>
      Array.from({ length: Math.max(1, Math.ceil(items.length / 3)) }, (_, index) => ({
        name: `${list.replaceAll('/', '-')}-${index + 1}.json`,
        mimeType: 'application/json',
        buffer: Buffer.from(JSON.stringify(keygenPage(account, list, items, index + 1, 3), null, 2)),
      })),
    );
    const total = async () => (await app.gql('{ licenses(first: 1) { totalCount } }', {})).licenses.totalCount as number;
    const before = await total();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.locator('#main').getByRole('button', { name: 'Import', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Import licenses' });
    await dialog.getByRole('tab', { name: 'From Keygen' }).click();
    const choose = async () => {
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'), dialog.getByRole('button', { name: 'Choose Keygen files' }).click()]);
      await chooser.setFiles(files);
    };

    // A file that is not JSON: a clear message, no request.
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), dialog.getByRole('button', { name: 'Choose Keygen files' }).click()]);
    await chooser.setFiles([files[0], { name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from('not json') }]);
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await poll(() => dialog.getByTestId('keygen-error').textContent()).toMatch(/notes\.json is not JSON/);

    await choose();
    expect(await dialog.getByRole('button', { name: 'Import', exact: true }).isDisabled()).toBe(true); // preview first
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await poll(() => dialog.getByTestId('keygen-summary').textContent(), 60_000).toMatch(/^Preview: nothing was written\. 10 licenses and 10 machines read from \d+ pages; would create 10 licenses/);
    const rows = await dialog.getByTestId('keygen-counts').locator('tbody tr').allTextContents();
    expect(rows).toContain('Licenses10000');
    expect(rows).toContain('Products1000');
    expect(await total()).toBe(before);
    // axe checked the dialog when it opened (on its CSV tab): once more now, with the Keygen tab and its report (app.errors).
    const checked = app.overlays.checked.length;
    await page.locator('[data-axe-checked]').evaluateAll((elements) => elements.forEach((element) => element.removeAttribute('data-axe-checked')));
    await page.screenshot({ path: path.join(SCREENSHOTS, 'import-04-keygen-preview.png'), fullPage: true });

    await dialog.getByRole('button', { name: 'Import', exact: true }).click();
    expect(app.overlays.checked.length).toBeGreaterThan(checked);
    await poll(() => dialog.getByTestId('keygen-summary').textContent(), 60_000).toMatch(/^Imported\. .*created 10 licenses/);
    expect(await total()).toBe(before + 10);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'import-05-keygen-imported.png'), fullPage: true });

    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await poll(() => dialog.getByTestId('keygen-summary').textContent(), 60_000).toMatch(/would create 0 licenses/);
    await dialog.getByRole('button', { name: 'Import', exact: true }).click();
    await poll(() => dialog.getByTestId('keygen-summary').textContent(), 60_000).toMatch(/^Imported\. .*created 0 licenses/);
    expect(await dialog.getByTestId('keygen-counts').locator('tbody tr').allTextContents()).toContain('Licenses00100');
    expect(await total()).toBe(before + 10);
    expect(app.errors).toEqual([]);
  });
});
