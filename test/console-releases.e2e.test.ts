import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { outboxLink, SCREENSHOTS, signInAsAdmin, startConsoleE2e, chooseOption, type ConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';

// A product's Releases page in Chromium against the real server: a draft created in the dialog, a file uploaded
// to it through the staff upload route with a progress bar, the draft published, then yanked after the
// confirmation; a read-only member sees the releases without any of the write buttons.

const chromiumNeed = needChromium();
let app: ConsoleE2e;
let page: Page;
let productId: string;
const poll = <T>(read: () => T | Promise<T>, timeout = 20_000) => expect.poll(read, { timeout });

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  app = await startConsoleE2e('releases', chromiumNeed.path);
  page = await app.newPage(1280);
  const created = await app.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Studio' } });
  productId = created.createProduct.product.id;
}, 300_000);
afterAll(() => app?.stop());

describeWith(chromiumNeed)('releases in Chromium', () => {
  const row = (version: string) => page.getByTestId('release-row').filter({ hasText: version });

  it('creates a draft from the products page', async () => {
    await signInAsAdmin(page);
    await page.goto('/products');
    await page.getByRole('link', { name: 'Releases of Acme Studio' }).click();
    await page.getByText('No releases yet').waitFor();
    await page.getByRole('heading', { name: 'Releases of Acme Studio' }).waitFor();
    await page.getByRole('button', { name: 'New release' }).click();
    const dialog = page.getByRole('dialog', { name: 'New release' });
    await dialog.getByLabel(/^Version/).fill('1.4.0');
    await chooseOption(page, dialog.getByLabel(/^Channel/), 'Beta');
    await dialog.getByLabel(/^Notes/).fill('Faster start-up.');
    await dialog.getByRole('button', { name: 'Create draft' }).click();
    await row('1.4.0').waitFor();
    expect(await row('1.4.0').getByTestId('release-status').textContent()).toBe('Draft');
    expect(await row('1.4.0').textContent()).toContain('Beta');
    // Nothing to publish yet: the button says why.
    expect(await row('1.4.0').getByRole('button', { name: 'Publish' }).isDisabled()).toBe(true);
  });

  it('uploads a file with a progress bar: 100%, then the file is listed with its size', async () => {
    await row('1.4.0').getByRole('button', { name: 'Upload file' }).click();
    const dialog = page.getByRole('dialog', { name: 'Upload a file to 1.4.0' });
    const contents = Buffer.alloc(204_800, 7);
    await page.locator('input[type=file]').setInputFiles({ name: 'AcmeStudio-1.4.0-x64.exe', mimeType: 'application/octet-stream', buffer: contents });
    await dialog.getByRole('textbox', { name: /^Platform/ }).fill('win32');
    await dialog.getByRole('textbox', { name: /^Architecture/ }).fill('x64');
    await dialog.getByRole('textbox', { name: /^Architecture/ }).press('Tab'); // closes the suggestions over the buttons
    await dialog.getByRole('button', { name: 'Upload', exact: true }).click();
    await dialog.getByText('100%: 205 kB uploaded').waitFor();
    expect(await dialog.getByRole('progressbar', { name: 'Upload progress' }).getAttribute('aria-valuenow')).toBe('100');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'releases-01-uploaded.png'), fullPage: true });
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    const artifact = page.getByTestId('artifact-row').filter({ hasText: 'AcmeStudio-1.4.0-x64.exe' });
    await artifact.waitFor();
    expect(await artifact.textContent()).toContain('205 kB');
    expect(await artifact.textContent()).toContain('win32 / x64');
    const { releases } = await app.gql('query($id: ID!) { releases(productId: $id) { nodes { artifacts { size filename } } } }', { id: productId });
    expect(releases.nodes[0].artifacts).toEqual([{ size: 204_800, filename: 'AcmeStudio-1.4.0-x64.exe' }]);
  });

  it('a bad upload answers with the server\'s reason on the field', async () => {
    await row('1.4.0').getByRole('button', { name: 'Upload file' }).click();
    const dialog = page.getByRole('dialog', { name: 'Upload a file to 1.4.0' });
    await page.locator('input[type=file]').setInputFiles({ name: 'other.zip', mimeType: 'application/zip', buffer: Buffer.from('zip') });
    await dialog.getByRole('textbox', { name: /^Platform/ }).fill('Windows 11!');
    await dialog.getByRole('textbox', { name: /^Architecture/ }).fill('x64');
    await dialog.getByRole('textbox', { name: /^Architecture/ }).press('Tab'); // closes the suggestions over the buttons
    await dialog.getByRole('button', { name: 'Upload', exact: true }).click();
    await dialog.getByText(/Give a platform such as win32/).waitFor();
    await page.getByText('The upload failed').first().waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByTestId('artifact-row').count()).toBe(1);
  });

  it('publishes the draft, then yanks it after the confirmation', async () => {
    await row('1.4.0').getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('dialog', { name: 'Publish 1.4.0?' }).getByRole('button', { name: 'Publish' }).click();
    await poll(() => row('1.4.0').getByTestId('release-status').textContent()).toBe('Published');
    expect(await row('1.4.0').getByRole('button', { name: 'Upload file' }).count()).toBe(0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'releases-02-published.png'), fullPage: true });

    await row('1.4.0').getByRole('button', { name: 'Yank' }).click();
    const confirm = page.getByRole('dialog', { name: 'Yank 1.4.0?' });
    await confirm.getByText(/withdrawn for good/).waitFor();
    // Cancel changes nothing.
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await row('1.4.0').getByTestId('release-status').textContent()).toBe('Published');
    await row('1.4.0').getByRole('button', { name: 'Yank' }).click();
    await page.getByRole('dialog', { name: 'Yank 1.4.0?' }).getByRole('button', { name: 'Yank release' }).click();
    await poll(() => row('1.4.0').getByTestId('release-status').textContent()).toBe('Yanked');
    expect(await row('1.4.0').getByRole('button').count()).toBe(0);
    const { releases } = await app.gql('query($id: ID!) { releases(productId: $id) { nodes { status publishedAt yankedAt } } }', { id: productId });
    expect(releases.nodes[0]).toMatchObject({ status: 'YANKED', publishedAt: expect.any(String), yankedAt: expect.any(String) });
  });

  it('deletes a draft', async () => {
    await app.gql('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId, version: '1.5.0-rc.1', channel: 'RC' } });
    await page.reload();
    await row('1.5.0-rc.1').getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete draft 1.5.0-rc.1?' }).getByRole('button', { name: 'Delete draft' }).click();
    await poll(() => row('1.5.0-rc.1').count()).toBe(0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'releases-03-yanked.png'), fullPage: true });
    expect(app.errors).toEqual([]);
  });

  it('a read-only member sees the releases and their downloads, without the write buttons', async () => {
    await app.gql('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId, version: '1.6.0' } });
    await app.gql('mutation($input: InviteUserInput!) { inviteUser(input: $input) { invitation { id } } }', { input: { email: 'bob@acme.test', role: 'READ_ONLY' } });
    const link = await outboxLink(app.env, 'invitation', 'bob@acme.test');
    const bob = await app.newPage(1280);
    try {
      await bob.goto(link);
      await bob.getByLabel(/^Password/).fill('bob password 123');
      await bob.getByLabel(/^Repeat password/).fill('bob password 123');
      await bob.getByRole('button', { name: 'Join and sign in' }).click();
      await bob.getByRole('heading', { name: 'Dashboard' }).waitFor();
      await bob.goto(`/products/${productId}/releases`);
      await bob.getByTestId('release-row').filter({ hasText: '1.6.0' }).waitFor();
      expect(await bob.getByTestId('release-row').count()).toBe(2);
      expect(await bob.getByRole('button', { name: 'New release' }).isDisabled()).toBe(true);
      for (const name of ['Upload file', 'Publish', 'Yank', 'Delete']) expect(await bob.getByRole('button', { name }).count()).toBe(0);
      await bob.getByRole('columnheader', { name: 'Downloads' }).first().waitFor();
      expect(app.errors).toEqual([]);
    } finally {
      await bob.context().close();
    }
  });
});
