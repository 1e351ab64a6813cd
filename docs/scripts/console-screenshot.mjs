// Takes the README's console screenshot from a running server with Debian's Chromium (playwright-core):
//   node docs/scripts/console-screenshot.mjs <url> <email> <password> [out.png]
// The server must have a company whose admin signs in with <email>/<password> (the first-run setup, or
// `pnpm cli user:create`), and some products and licenses to show.
import { chromium } from 'playwright-core';

const [url, email, password, out = 'docs/public/images/console-dashboard.png'] = process.argv.slice(2);
if (!url || !email || !password) {
  console.error('usage: node docs/scripts/console-screenshot.mjs <url> <email> <password> [out.png]');
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  await page.goto(url);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel(/^Password/).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[role="status"]').length === 0, null, { timeout: 15_000 });
  await page.waitForTimeout(1000); // charts finish their entry animation
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
}
