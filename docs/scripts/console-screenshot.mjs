// Takes the console screenshots of the README and the Console guide from a running server with Debian's Chromium
// (playwright-core), 1280 × 800:
//   node docs/scripts/console-screenshot.mjs <url> <email> <password> [outDir]
// The server must have a company whose admin signs in with <email>/<password> (the first-run setup, or
// `pnpm cli user:create`), and some products, licenses and activations to show.
import path from 'node:path';
import { chromium } from 'playwright-core';

const [url, email, password, outDir = 'docs/public/images'] = process.argv.slice(2);
if (!url || !email || !password) {
  console.error('usage: node docs/scripts/console-screenshot.mjs <url> <email> <password> [outDir]');
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const settle = async () => {
    await page.waitForFunction(() => document.querySelectorAll('[role="status"]').length === 0, null, { timeout: 15_000 });
    await page.waitForTimeout(800); // charts finish their entry animation
  };
  const shoot = async (name) => {
    await settle();
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    console.log(`wrote ${path.join(outDir, `${name}.png`)}`);
  };
  await page.goto(url);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel(/^Password/).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await shoot('console-dashboard');
  const nav = async (label, heading) => {
    await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
  };
  await nav('Licenses', 'Licenses');
  await shoot('console-licenses');
  await page.getByRole('link', { name: /^ACME-/ }).first().click();
  await page.waitForURL(/\/licenses\/[0-9a-f-]{36}/);
  await page.getByRole('heading', { name: 'Activations' }).first().waitFor();
  await shoot('console-license');
  await nav('Activity log', 'Activity log');
  await shoot('console-activity');
} finally {
  await browser.close();
}
