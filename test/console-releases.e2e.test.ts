import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseOption, type ConsoleE2e, outboxLink, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';

// A product's Releases page in Chromium against the real server: a draft created in the dialog, a file uploaded
// to it through the staff upload route with a progress bar (its file type and expected SHA-256 checked), the draft
// published, then yanked after the confirmation; a read-only member sees the releases without any of the write
// buttons (Edit included). A product with more releases than a page: Load more reaches the oldest, the channel and
// status filters narrow the list, and the Edit dialog changes notes and channel, or shows on the field why not.

const chromiumNeed = needChromium();
let app: ConsoleE2e;
reportServerOnFailure(() => app);
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

  it('the expected SHA-256 refuses a different file on its field; the file type is asked for when the name has none', async () => {
    const contents = Buffer.from('ELF portable build');
    await row('1.4.0').getByRole('button', { name: 'Upload file' }).click();
    const dialog = page.getByRole('dialog', { name: 'Upload a file to 1.4.0' });
    await page.locator('input[type=file]').setInputFiles({ name: 'AcmeStudio-portable', mimeType: 'application/octet-stream', buffer: contents });
    await dialog.getByRole('textbox', { name: /^Platform/ }).fill('linux');
    await dialog.getByRole('textbox', { name: /^Architecture/ }).fill('x64');
    await dialog.getByRole('textbox', { name: /^Architecture/ }).press('Tab'); // on to the checksum: closes the suggestions
    const checksum = dialog.getByRole('textbox', { name: /^Expected SHA-256/ });
    const filetype = dialog.getByRole('textbox', { name: /^File type/ });
    const upload = async () => {
      await checksum.focus(); // leaves the file type field: its suggestions close
      await dialog.getByRole('button', { name: 'Upload', exact: true }).click();
    };
    // Not a checksum: said before anything is sent.
    await checksum.fill('abc123');
    await upload();
    await dialog.getByText('The expected SHA-256 must be 64 hexadecimal digits.').waitFor();
    // Another file's checksum: the server refuses the bytes that arrived, on the field.
    await filetype.fill('AppImage');
    await checksum.fill('0'.repeat(64));
    await upload();
    await dialog.getByText(/The file that arrived has SHA-256 [0-9a-f]{64}, not this one/).waitFor();
    // No file type and none in the name: the server asks for one, on the field.
    await filetype.fill('');
    await checksum.fill(createHash('sha256').update(contents).digest('hex').toUpperCase());
    await upload();
    await dialog.getByText(/Give the file type/).waitFor();
    expect(await page.getByTestId('artifact-row').count()).toBe(1);
    await filetype.fill('AppImage');
    await upload();
    await dialog.getByText(/^100%/).waitFor();
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    const artifact = page.getByTestId('artifact-row').filter({ hasText: 'AcmeStudio-portable' });
    await artifact.waitFor();
    expect(await artifact.textContent()).toContain('AppImage');
    const { releases } = await app.gql('query($id: ID!) { releases(productId: $id) { nodes { artifacts { filename filetype sha256 } } } }', { id: productId });
    expect(releases.nodes[0].artifacts).toContainEqual({ filename: 'AcmeStudio-portable', filetype: 'AppImage', sha256: createHash('sha256').update(contents).digest('hex') });
    expect(app.errors).toEqual([]);
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
      for (const name of ['Upload file', 'Publish', 'Yank', 'Delete', 'Edit']) expect(await bob.getByRole('button', { name }).count()).toBe(0);
      await bob.getByRole('columnheader', { name: 'Downloads' }).first().waitFor();
      expect(app.errors).toEqual([]);
    } finally {
      await bob.context().close();
    }
  });

  describe('a product with more releases than a page', () => {
    let pagedId: string;
    // 25 drafts, 2.0.0 to 2.24.0; every fifth on the beta channel.
    const VERSIONS = Array.from({ length: 25 }, (_, i) => `2.${i}.0`);

    beforeAll(async () => {
      if (chromiumNeed.missing) return;
      pagedId = (await app.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Paging Studio' } })).createProduct.product.id;
      for (const [i, version] of VERSIONS.entries()) {
        await app.gql('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId: pagedId, version, channel: i % 5 === 0 ? 'BETA' : 'STABLE' } });
      }
    });

    it('shows 20, and Load more the rest, down to the oldest', async () => {
      await page.goto(`/products/${pagedId}/releases`);
      await row('2.24.0').waitFor();
      expect(await page.getByTestId('release-row').count()).toBe(20);
      await page.getByText('Showing 20 of 25').waitFor();
      expect(await row('2.0.0').count()).toBe(0);
      await page.getByRole('button', { name: 'Load more' }).click();
      await row('2.0.0').waitFor();
      expect(await page.getByTestId('release-row').count()).toBe(25);
      await page.getByText('Showing 25 of 25').waitFor();
      expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
      // Newest version first across both pages.
      const versions = await page.getByTestId('release-row').locator('td:first-child').allTextContents();
      expect(versions.map((text) => text.trim())).toEqual([...VERSIONS].reverse());
      expect(app.errors).toEqual([]);
    });

    it('narrows by channel and by status, kept in the address', async () => {
      await chooseOption(page, page.getByRole('textbox', { name: 'Channel', exact: true }), 'Beta');
      await poll(() => page.getByTestId('release-row').count()).toBe(5);
      expect(page.url()).toContain('channel=beta');
      await page.getByText('Showing 5 of 5').waitFor();
      await page.getByRole('radiogroup', { name: 'Status' }).getByText('Published', { exact: true }).click();
      await page.getByText('No releases match').waitFor();
      await page.getByRole('button', { name: 'Clear filters' }).first().click();
      // Every release counts again (25, not the filter's 5); how many rows show depends on whether the pages loaded
      // before are still in graphcache (20, or all 25 merged by relayPagination): the paging test covers the rows.
      await page.getByText(/^Showing (20|25) of 25$/).waitFor();
      expect(page.url()).not.toContain('channel=');
    });

    it('edits the notes and channel of a draft', async () => {
      await row('2.24.0').getByRole('button', { name: 'Edit' }).click();
      const dialog = page.getByRole('dialog', { name: 'Edit 2.24.0' });
      expect(await dialog.getByRole('textbox', { name: /^Version/ }).count()).toBe(0); // fixed once created
      await dialog.getByLabel(/^Notes/).fill('Faster sync.');
      await chooseOption(page, dialog.getByLabel(/^Channel/), 'Release candidate');
      await dialog.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('2.24.0 was saved.').waitFor();
      await dialog.waitFor({ state: 'hidden' });
      await poll(() => row('2.24.0').textContent()).toContain('Release candidate');
      const { releases } = await app.gql('query($id: ID!) { releases(productId: $id, first: 1) { nodes { version notes channel status } } }', { id: pagedId });
      expect(releases.nodes[0]).toEqual({ version: '2.24.0', notes: 'Faster sync.', channel: 'RC', status: 'DRAFT' });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'releases-04-edited.png'), fullPage: true });
    });

    it('an invalid value is shown on its field and nothing is saved', async () => {
      await row('2.23.0').getByRole('button', { name: 'Edit' }).click();
      const dialog = page.getByRole('dialog', { name: 'Edit 2.23.0' });
      const features = dialog.getByRole('textbox', { name: /^Required features/ });
      await features.fill('x'.repeat(101));
      await features.press('Enter');
      await dialog.getByRole('button', { name: 'Save changes' }).click();
      await dialog.getByText('Each feature key is 1 to 100 characters.').waitFor();
      expect(await dialog.getByRole('textbox', { name: /^Required features/ }).getAttribute('aria-invalid')).toBe('true');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      const { release } = await app.gql('query($id: ID!) { release(id: $id) { requiredFeatures } }', { id: (await app.gql('query($id: ID!) { releases(productId: $id, first: 2) { nodes { id } } }', { id: pagedId })).releases.nodes[1].id });
      expect(release.requiredFeatures).toEqual([]);
      expect(app.errors).toEqual([]);
    });
  });
});
