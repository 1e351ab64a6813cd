import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../server/src/jobs/email/transport.js';
import { jobContext } from '../server/src/jobs/scheduler.js';
import { weeklyDigestJob } from '../server/src/jobs/weekly-digest.js';
import { queueWeeklyDigests } from '../server/src/services/notifications/digest.js';
import { resumeScheduledRuns } from '../server/src/services/notifications/resume.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { needChromium, itWith } from './support/optional.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';

const MONDAY = '2026-06-01T09:00:00.000Z';
const chromiumNeed = needChromium();
const CHROMIUM = chromiumNeed.path;

let app: TestApp;
let peer: PostmarkPeer;
const clock = new TestClock(Date.parse(MONDAY));
const at = (days: number) => new Date(clock.now().getTime() + days * DAY);

async function runDigest() {
  const transport = createTransport(app.config, app.deps.logger);
  return weeklyDigestJob.run(jobContext({ ...app.deps, clock: clock.now }, transport, clock.now()));
}

async function user(tenantId: string, email: string, extra: { role?: 'CompanyAdmin' | 'ReadOnly'; digestEmailEnabled?: boolean; deactivatedAt?: Date } = {}) {
  return app.prisma.user.create({ data: { tenantId, email, role: extra.role ?? 'CompanyAdmin', passwordHash: 'unused', digestEmailEnabled: extra.digestEmailEnabled, deactivatedAt: extra.deactivatedAt } });
}

let acme: { id: string };
beforeAll(async () => {
  peer = await startPostmarkPeer();
  app = await startTestApp({ clock, env: peer.env });
  acme = await app.seedTenant({ name: 'Acme Corp', keyPrefix: 'ACME' });
  await user(acme.id, 'ada@acme.test');
  await user(acme.id, 'bob@acme.test', { digestEmailEnabled: false });
  await user(acme.id, 'reader@acme.test', { role: 'ReadOnly' });
  await user(acme.id, 'gone@acme.test', { deactivatedAt: at(-30) });
  const studio = await app.seedProduct(acme.id, 'Acme Studio');
  const paint = await app.seedProduct(acme.id, 'Acme Paint');
  // 2 expire within 7 days (red), 7 within 30 days (amber: more than 5).
  const expiries: [number, string | null, string][] = [
    [12, 'carol@buyer.test', studio.id],
    [2, 'dave@buyer.test', paint.id],
    [20, null, studio.id],
    [5, 'erin@buyer.test', studio.id],
    [10, 'frank@buyer.test', paint.id],
    [25, 'grace@buyer.test', paint.id],
    [15, 'heidi@buyer.test', studio.id],
    [90, 'ivan@buyer.test', studio.id],
  ];
  for (const [days, customerEmail, productId] of expiries) await app.seedLicense(acme.id, productId, { expiresAt: at(days), customerEmail });
  const perpetual = await app.seedLicense(acme.id, studio.id, {});
  const revoked = await app.seedLicense(acme.id, studio.id, { expiresAt: at(3) });
  await app.prisma.license.update({ where: { id: revoked.license.id }, data: { status: 'revoked', revokedAt: at(-1) } });
  await app.seedLicense(acme.id, studio.id, { expiresAt: at(-2) }); // expired: not active
  for (const days of [-1, -3, -6.9, -8]) {
    await app.prisma.activation.create({ data: { tenantId: acme.id, licenseId: perpetual.license.id, createdAt: at(days) } });
  }
}, 120_000);

afterAll(async () => {
  await app?.close();
  await peer?.close();
});

describe('weekly digest', () => {
  it('goes to each active CompanyAdmin with the digest enabled, once per week', async () => {
    const quiet = await app.seedTenant({ name: 'Quiet Co', keyPrefix: 'QUIET' });
    await user(quiet.id, 'owner@quiet.test');
    const result = await runDigest();
    expect(result).toMatchObject({ week: '2026-W23', emails: 1, skipped: 1, delivery: { sent: 1 } });
    expect(peer.messages.map((message) => message.To)).toEqual(['ada@acme.test']);
    expect(peer.messages[0]).toMatchObject({ From: 'Keyforge <alerts@keyforge.test>', Tag: 'weekly-digest' });

    // A rerun in the same week (a second worker, a manual run on Wednesday) sends nothing new.
    clock.advance(2 * DAY);
    expect(await runDigest()).toMatchObject({ emails: 0 });
    expect(peer.messages).toHaveLength(1);
    clock.set(MONDAY);
  });

  it('shows the documented figures: red when anything expires within 7 days, amber when more than 5 within 30', async () => {
    const [digest] = peer.to('ada@acme.test');
    const html = digest.HtmlBody!;
    const stat = (label: string) => html.match(new RegExp(`data-highlight="(\\w+)"[^>]*>\\s*<div[^>]*>${label}</div>\\s*<div[^>]*>(\\d+)</div>`))?.slice(1);
    expect(stat('Active Licenses')).toEqual(['none', '9']); // 8 with an expiry ahead + 1 perpetual; revoked and expired are not active
    expect(stat('Activations \\(7d\\)')).toEqual(['none', '3']);
    expect(stat('Expiring in 7 days')).toEqual(['red', '2']);
    expect(stat('Expiring in 30 days')).toEqual(['amber', '7']);
    expect(html).toContain('color:#d92d20');
    expect(html).toContain('href="http://licensing.test/"');
    expect(digest.TextBody).toContain('Expiring in 7 days:   2  (!) needs attention');
    expect(digest.TextBody).toContain('Open the dashboard: http://licensing.test/');
    expect(digest.Subject).toBe('Weekly license digest for Acme Corp: 9 active licenses, 2 expiring this week');
  });

  it('lists at most 5 upcoming expiries, soonest first, with product, customer and date', async () => {
    const html = peer.to('ada@acme.test')[0].HtmlBody!;
    const rows = [...html.matchAll(/<tr><td[^>]*>([^<]*)<\/td><td[^>]*>([^<]*)<\/td><td[^>]*><span[^>]*>([^<]*)<\/span><\/td><\/tr>/g)].map((row) => row.slice(1));
    expect(rows).toEqual([
      ['Acme Paint', 'dave@buyer.test', 'Jun 3, 2026'],
      ['Acme Studio', 'erin@buyer.test', 'Jun 6, 2026'],
      ['Acme Paint', 'frank@buyer.test', 'Jun 11, 2026'],
      ['Acme Studio', 'carol@buyer.test', 'Jun 13, 2026'],
      ['Acme Studio', 'heidi@buyer.test', 'Jun 16, 2026'],
    ]);
  });

  it('is skipped for a tenant with no active license and no activation in 7 days, not otherwise', async () => {
    peer.reset();
    clock.set('2026-06-08T09:00:00.000Z');
    // Only recent activations (its one license has expired since): still gets a digest, unhighlighted.
    const busy = await app.seedTenant({ name: 'Busy Ltd', keyPrefix: 'BUSY' });
    await user(busy.id, 'admin@busy.test');
    const product = await app.seedProduct(busy.id, 'Busy App');
    const { license } = await app.seedLicense(busy.id, product.id, { expiresAt: at(-1) });
    await app.prisma.activation.create({ data: { tenantId: busy.id, licenseId: license.id, createdAt: at(-2) } });
    const result = await runDigest();
    expect(result).toMatchObject({ week: '2026-W24', skipped: 1 }); // Quiet Co
    expect(peer.messages.map((message) => message.To).sort()).toEqual(['ada@acme.test', 'admin@busy.test']);
    const html = peer.to('admin@busy.test')[0].HtmlBody!;
    expect(html).not.toMatch(/data-highlight="(red|amber)"/);
    expect(html).toContain('No licenses expire in the next 30 days.');
  });

  it('follows each admin’s preference', async () => {
    peer.reset();
    clock.set('2026-06-15T09:00:00.000Z');
    await app.prisma.user.update({ where: { email: 'ada@acme.test' }, data: { digestEmailEnabled: false } });
    await app.prisma.user.update({ where: { email: 'bob@acme.test' }, data: { digestEmailEnabled: true } });
    // Busy Ltd's activation is now 9 days old and its license expired: skipped this week.
    expect(await runDigest()).toMatchObject({ skipped: 2, emails: 1 });
    expect(peer.messages.map((message) => message.To)).toEqual(['bob@acme.test']);
  });

  it('one tenant failing is logged and retried; the others get their digest; a resume finishes the week once', async () => {
    peer.reset();
    const now = new Date('2026-06-22T09:00:00.000Z');
    const broken = await app.seedTenant({ name: 'Broken Digest', keyPrefix: 'BRKD' });
    await user(broken.id, 'admin@broken.test');
    const product = await app.seedProduct(broken.id, 'Broken App');
    await app.seedLicense(broken.id, product.id, { expiresAt: new Date(now.getTime() + 60 * DAY) });
    const ctx = { db: app.deps.db, now, publicUrl: app.config.publicUrl, logger: app.deps.logger };
    const first = await queueWeeklyDigests({ ...ctx, failpoint: (_job: string, tenantId: string) => { if (tenantId === broken.id) throw new Error('digest failure'); } });
    expect(first).toMatchObject({ week: '2026-W26', run: { failedTenants: [broken.id], finished: false } });
    expect(first.emails).toBeGreaterThanOrEqual(1);
    expect(app.logs.some((line) => line.includes('tenant failed in a scheduled run') && line.includes(broken.id))).toBe(true);
    const sentTo = async () => (await app.prisma.emailOutbox.findMany({ where: { kind: 'weekly-digest', idempotencyKey: { contains: '2026-W26' } }, select: { toAddress: true } })).map((row) => row.toAddress).sort();
    expect(await sentTo()).toEqual(['bob@acme.test']);
    const resumed = await resumeScheduledRuns({ ...ctx, now: new Date(now.getTime() + 60_000) });
    expect(resumed).toEqual([expect.objectContaining({ job: 'weekly-digest', period: '2026-W26', tenants: 1, finished: true, emails: 1 })]);
    expect(await sentTo()).toEqual(['admin@broken.test', 'bob@acme.test']);
    // The week is done: a later resume, and a rerun, add nothing.
    expect(await resumeScheduledRuns({ ...ctx, now: new Date(now.getTime() + 2 * DAY) })).toEqual([]);
    expect(await queueWeeklyDigests({ ...ctx, now: new Date(now.getTime() + 2 * DAY) })).toMatchObject({ emails: 0 });
  });

  itWith(chromiumNeed)('renders in a browser with the figures visible (screenshot in test-output/)', async () => {
    // The first digest, of Jun 1: both highlights on.
    const { html } = await app.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: 'ada@acme.test', kind: 'weekly-digest' }, orderBy: { createdAt: 'asc' } });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 680, height: 900 } });
      await page.setContent(html, { waitUntil: 'load' });
      mkdirSync('test-output', { recursive: true });
      await page.screenshot({ path: path.join('test-output', 'weekly-digest.png'), fullPage: true });
      const text = await page.innerText('body');
      for (const expected of ['Your weekly license digest', 'ACTIVE LICENSES', 'ACTIVATIONS (7D)', 'EXPIRING IN 7 DAYS', 'EXPIRING IN 30 DAYS', 'dave@buyer.test', 'Open the dashboard']) {
        expect(text).toContain(expected);
      }
      // The red figure is red on screen, not only in the markup.
      const redFigure = page.locator('[data-highlight="red"] div').nth(1);
      expect(await redFigure.innerText()).toBe('2');
      expect(await redFigure.evaluate((element) => getComputedStyle(element).color)).toBe('rgb(217, 45, 32)');
      const phone = await browser.newPage({ viewport: { width: 375, height: 800 } });
      await phone.setContent(html, { waitUntil: 'load' });
      await phone.screenshot({ path: path.join('test-output', 'weekly-digest-phone.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
