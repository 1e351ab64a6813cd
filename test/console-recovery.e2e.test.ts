import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN, confirmIdentity, type ConsoleE2e, outboxLink, reportServerOnFailure, SCREENSHOTS, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { postJson, runCli } from './support/processes.js';

/**
 * Account recovery in the console (Chromium, the real server on PostgreSQL): "Forgot password?", the reset page, and
 * the Team page's Unlock and Send reset link. Screenshots at 1280 and 375 px go to test-output/screenshots/.
 */
const chromiumNeed = needChromium();
const MEMBER = 'bob@acme.test';

let e2e: ConsoleE2e;
reportServerOnFailure(() => e2e);

const newPage = (width: number) => e2e.newPage(width);

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  e2e = await startConsoleE2e('recovery', chromiumNeed.path);
  expect(runCli(['user:create', '--tenant', 'ACME', '--email', MEMBER, '--password', 'bobs old password', '--role', 'ReadOnly', '--json'], e2e.env).status).toBe(0);
}, 600_000);

afterAll(async () => {
  const errors = e2e?.errors ?? [];
  await e2e?.stop();
  expect(errors, 'browser errors').toEqual([]);
});

describeWith(chromiumNeed)('account recovery in the console', () => {
  it('a locked member: the admin unlocks them and sends a reset link from the Team page; the link sets a new password and signs in', async () => {
    for (let n = 0; n < 5; n++) {
      await postJson(`${e2e.server.url}/api/graphql`, { query: 'mutation($e: String!) { login(input: { email: $e, password: "a wrong password" }) { __typename } }', variables: { e: MEMBER } });
    }
    for (const width of [1280, 375]) {
      const page = await newPage(width);
      await page.goto('/login');
      await page.getByLabel('Email').fill(ADMIN.email);
      await page.getByLabel('Password').fill(ADMIN.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.pathname === '/');
      await page.goto('/settings/team');
      const row = page.getByRole('row').filter({ hasText: MEMBER });
      if (width === 1280) {
        await row.getByText('locked', { exact: true }).waitFor();
        await page.screenshot({ path: path.join(SCREENSHOTS, 'recovery-team-locked-1280.png'), fullPage: true });
        await row.getByRole('button', { name: 'Unlock' }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Unlock' }).click();
        await page.getByText(`${MEMBER} can sign in again.`).waitFor();
        await expect.poll(() => row.getByText('locked', { exact: true }).count()).toBe(0);
        await row.getByRole('button', { name: 'Send reset link' }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Send link' }).click();
        await confirmIdentity(page, ADMIN.password); // sending a reset link is an account-security action
        // No mail provider here: the toast says where the link is kept.
        await page.getByText(`Reset link for ${MEMBER} kept in the outbox, not emailed: no mail provider is configured. Open it on the Emails page (Preview) and pass the link on.`).waitFor();
      } else {
        await page.getByText(MEMBER).first().waitFor();
        await page.screenshot({ path: path.join(SCREENSHOTS, 'recovery-team-375.png'), fullPage: true });
      }
      await page.context().close();
    }
    // The member opens the link in their own browser.
    const bob = await newPage(1280);
    await bob.goto(await outboxLink(e2e.env, 'password-reset', MEMBER));
    await bob.getByText(`for ${MEMBER}`).waitFor();
    await bob.screenshot({ path: path.join(SCREENSHOTS, 'recovery-reset-1280.png'), fullPage: true });
    await bob.getByLabel('New password').fill('bobs brand new password');
    await bob.getByLabel('Repeat password').fill('bobs brand new password');
    await bob.getByRole('button', { name: 'Change password and sign in' }).click();
    await bob.waitForURL((url) => url.pathname === '/');
    expect(new URL(bob.url()).hash).toBe('');
    await bob.context().close();
  });

  it('"Forgot password?" on the sign-in page: without a mail provider it says where the link is kept; the page says the same for any address', async () => {
    for (const width of [1280, 375]) {
      const page = await newPage(width);
      await page.goto('/login');
      await page.getByLabel('Email').fill(MEMBER);
      await page.getByRole('link', { name: 'Forgot password?' }).click();
      await page.waitForURL((url) => url.pathname === '/forgot-password');
      await expect.poll(() => page.getByLabel('Email').inputValue()).toBe(MEMBER);
      await page.screenshot({ path: path.join(SCREENSHOTS, `recovery-forgot-${width}.png`), fullPage: true });
      await page.getByRole('button', { name: 'Email me a link' }).click();
      // No mail provider here: no "check your email"; where the link is kept and who can read it.
      await page.getByText('No email is sent').waitFor();
      await page.getByText(`If ${MEMBER} belongs to an account, a link to choose a new password is kept in this server's email outbox`).waitFor();
      await page.getByText('pnpm cli outbox:list --kind password-reset --body').waitFor();
      expect(await page.getByText('Check your email').count()).toBe(0);
      expect(await page.getByText(/spam/).count()).toBe(0);
      await page.screenshot({ path: path.join(SCREENSHOTS, `recovery-forgot-sent-${width}.png`), fullPage: true });
      await page.context().close();
    }
    const page = await newPage(375);
    await page.goto(await outboxLink(e2e.env, 'password-reset', MEMBER));
    await page.getByText(`for ${MEMBER}`).waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'recovery-reset-375.png'), fullPage: true });
    await page.context().close();
  });
});
