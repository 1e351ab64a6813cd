import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../server/src/db/database.js';
import { createTransport } from '../server/src/jobs/email/transport.js';
import { expiryNotificationsJob } from '../server/src/jobs/expiry-notifications.js';
import { housekeepingJob } from '../server/src/jobs/housekeeping.js';
import { jobContext, startJobs, type Jobs } from '../server/src/jobs/scheduler.js';
import { ADMIN_ROWS_PER_THRESHOLD, EXPIRY_BATCH, queueExpiryNotifications, thresholdFor } from '../server/src/services/notifications/expiry.js';
import { daysUntil } from '../server/src/domain/countdown.js';
import { resumeScheduledRuns } from '../server/src/services/notifications/resume.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedLicensesInBulk, seeder } from './support/seed.js';
import { needChromium, itWith } from './support/optional.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';
import { waitUntil } from './support/wait.js';

const START = '2026-06-01T08:00:00.000Z';
const chromiumNeed = needChromium();
const CHROMIUM = chromiumNeed.path;

let app: TestApp;
let peer: PostmarkPeer;
const clock = new TestClock(Date.parse(START));
const at = (days: number) => new Date(clock.now().getTime() + days * DAY);

async function runExpiry(now = clock.now()) {
  return expiryNotificationsJob.run(jobContext({ ...app.deps, clock: clock.now }, createTransport(app.config, app.deps.logger), now));
}

async function admin(tenantId: string, email: string, extra: { role?: 'CompanyAdmin' | 'ReadOnly'; expiryEmailEnabled?: boolean; deactivatedAt?: Date } = {}) {
  return app.prisma.user.create({ data: { tenantId, email, role: extra.role ?? 'CompanyAdmin', passwordHash: 'unused', expiryEmailEnabled: extra.expiryEmailEnabled, deactivatedAt: extra.deactivatedAt } });
}

/** A tenant with two admins who want alerts, one who opted out, a read-only user and a deactivated admin. */
async function seedTenant(prefix: string, name: string) {
  const tenant = await app.seedTenant({ name, keyPrefix: prefix });
  const domain = `${prefix.toLowerCase()}.test`;
  await admin(tenant.id, `ada@${domain}`);
  await admin(tenant.id, `bob@${domain}`);
  await admin(tenant.id, `optout@${domain}`, { expiryEmailEnabled: false });
  await admin(tenant.id, `reader@${domain}`, { role: 'ReadOnly' });
  await admin(tenant.id, `gone@${domain}`, { deactivatedAt: at(-1) });
  const product = await app.seedProduct(tenant.id, `${name} Studio`);
  return { tenant, product, domain };
}

const kinds = (tag: string) => peer.messages.filter((message) => message.Tag === tag);

beforeAll(async () => {
  peer = await startPostmarkPeer();
  app = await startTestApp({ clock, env: peer.env });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await peer?.close();
});

beforeEach(() => {
  peer.reset();
  clock.set(START);
});

describe('expiry thresholds', () => {
  it('each fires on the day the countdown reads 30, 7 or 1 (or, after a missed day, the day after)', () => {
    // The argument is daysUntil: UTC calendar days to the expiry date (domain/countdown.ts).
    expect([31, 30, 29, 28, 8, 7, 6, 5, 2, 1, 0, -1].map(thresholdFor)).toEqual([null, 30, 30, null, null, 7, 7, null, null, 1, 1, null]);
  });
});

describe('expiry notification emails', () => {
  it('a license crossing 30, 7 and 1 days over 40 simulated days: three admin emails, three customer emails', async () => {
    const { tenant, product, domain } = await seedTenant('ACME', 'Acme');
    const { key, license } = await app.seedLicense(tenant.id, product.id, { expiresAt: new Date(Date.parse(START) + 35.2 * DAY), customerEmail: 'buyer@customer.test', maxActivations: 3 });
    await app.prisma.license.update({ where: { id: license.id }, data: { currentActivations: 2 } });
    const firedOn: string[] = [];
    for (let day = 0; day < 40; day++) {
      clock.set(new Date(Date.parse(START) + day * DAY).toISOString());
      const result = await runExpiry();
      if (result.notices) firedOn.push(`${clock.now().toISOString().slice(0, 10)}:${result.adminEmails}:${result.customerEmails}`);
    }
    expect(firedOn).toEqual(['2026-06-06:2:1', '2026-06-29:2:1', '2026-07-05:2:1']);
    expect(peer.to(`ada@${domain}`)).toHaveLength(3);
    expect(peer.to(`bob@${domain}`)).toHaveLength(3);
    for (const nobody of ['optout', 'reader', 'gone']) expect(peer.to(`${nobody}@${domain}`)).toHaveLength(0);
    const customer = peer.to('buyer@customer.test');
    expect(customer.map((message) => message.Subject)).toEqual([
      'Your Acme Studio license expires in 30 days',
      'Your Acme Studio license expires in 7 days',
      'Your Acme Studio license expires in 1 day',
    ]);
    // Branded with the tenant, shorter, and with the display hint only.
    expect(customer[0].HtmlBody).toContain('Acme');
    expect(customer[0].TextBody).toContain(`Your Acme Studio license (${license.keyHint}) from Acme expires on Jul 6, 2026.`);
    const adminMail = peer.to(`ada@${domain}`);
    expect(adminMail.map((message) => message.Subject)).toEqual(['Acme: 1 license expires in 30 days', 'Acme: 1 license expires in 7 days', 'Acme: 1 license expires in 1 day']);
    expect(adminMail[1].TextBody).toContain(`- Acme Studio | ${license.keyHint} | Jul 6, 2026 (in 7 days) | 2/3 seats`);
    expect(adminMail[1].HtmlBody).toContain('data-threshold="7"');
    for (const message of [...adminMail, ...customer]) {
      expect(`${message.HtmlBody}${message.TextBody}`).not.toContain(key);
      expect(message.HtmlBody).toContain(license.keyHint);
    }
  });

  it('a missed day inside the window still sends, and a rerun sends nothing twice', async () => {
    const { tenant, product, domain } = await seedTenant('MISS', 'Missed');
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(30.2), customerEmail: 'late@customer.test' });
    // The job did not run on Jun 1 (downtime); Jun 2 is still within the window.
    clock.set('2026-06-02T08:00:00.000Z');
    expect(await runExpiry()).toMatchObject({ notices: 1, adminEmails: 2, customerEmails: 1 });
    expect(peer.to(`ada@${domain}`)[0].TextBody).toContain('(in 29 days)');
    // The group's heading says so too (the countdown rule, not the threshold's number).
    expect(peer.to(`ada@${domain}`)[0].TextBody).toContain('Expiring in 29 days (1):');
    expect(await runExpiry()).toMatchObject({ notices: 0, adminEmails: 0, customerEmails: 0 });
    clock.set('2026-06-02T17:00:00.000Z');
    expect(await runExpiry()).toMatchObject({ notices: 0 });
    expect(peer.messages).toHaveLength(3);
  });

  it('never notifies perpetual or revoked licenses', async () => {
    const { tenant, product } = await seedTenant('NEVER', 'Never');
    await app.seedLicense(tenant.id, product.id, { customerEmail: 'perpetual@customer.test' });
    const { license } = await app.seedLicense(tenant.id, product.id, { expiresAt: at(30.5), customerEmail: 'revoked@customer.test' });
    await app.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked', revokedAt: at(0) } });
    for (let day = 0; day < 32; day++) {
      clock.set(new Date(Date.parse(START) + day * DAY).toISOString());
      await runExpiry();
    }
    expect(peer.messages.filter((message) => /never\.test$|^(perpetual|revoked)@/.test(message.To))).toHaveLength(0);
    expect(await app.prisma.expiryNotice.count({ where: { licenseId: license.id } })).toBe(0);
  });

  it('groups all licenses of a tenant reaching a threshold that day into one admin email, per tenant', async () => {
    const acme = await seedTenant('GRPA', 'Grouped A');
    const beta = await seedTenant('GRPB', 'Grouped B');
    const paint = await app.seedProduct(acme.tenant.id, 'Grouped A Paint');
    const hints = [
      (await app.seedLicense(acme.tenant.id, acme.product.id, { expiresAt: at(30.3) })).license.keyHint,
      (await app.seedLicense(acme.tenant.id, paint.id, { expiresAt: at(30.6) })).license.keyHint,
      (await app.seedLicense(acme.tenant.id, paint.id, { expiresAt: at(1.5) })).license.keyHint,
    ];
    const betaHint = (await app.seedLicense(beta.tenant.id, beta.product.id, { expiresAt: at(7.1) })).license.keyHint;
    expect(await runExpiry()).toMatchObject({ notices: 4, adminEmails: 4, customerEmails: 0 });
    const [mail] = peer.to(`ada@${acme.domain}`);
    expect(peer.to(`ada@${acme.domain}`)).toHaveLength(1);
    expect(mail.Subject).toBe('Grouped A: 3 licenses expire soon, the first in 1 day');
    for (const hint of hints) expect(mail.TextBody).toContain(hint);
    expect(mail.TextBody).not.toContain(betaHint);
    // Most urgent first: the 1-day group (red) before the 30-day group (grey).
    expect(mail.TextBody!.indexOf('Expiring in 1 day (1)')).toBeLessThan(mail.TextBody!.indexOf('Expiring in 30 days (2)'));
    const [betaMail] = peer.to(`ada@${beta.domain}`);
    expect(betaMail.TextBody).toContain(betaHint);
    expect(betaMail.TextBody).not.toContain(hints[0]);
  });

  it('opting out affects only that admin; with every admin opted out the customer is still told', async () => {
    const { tenant, product, domain } = await seedTenant('OPT', 'Opt');
    await app.prisma.user.update({ where: { email: `bob@${domain}` }, data: { expiryEmailEnabled: false } });
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(7.2), customerEmail: 'c1@customer.test' });
    await runExpiry();
    expect(peer.messages.map((message) => message.To).sort()).toEqual([`ada@${domain}`, 'c1@customer.test']);

    peer.reset();
    await app.prisma.user.update({ where: { email: `ada@${domain}` }, data: { expiryEmailEnabled: false } });
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(30.2), customerEmail: 'c2@customer.test' });
    expect(await runExpiry()).toMatchObject({ notices: 1, adminEmails: 0, customerEmails: 1 });
    expect(peer.messages.map((message) => message.To)).toEqual(['c2@customer.test']);
  });

  it('a renewed license is notified again for its new expiry date', async () => {
    const { tenant, product } = await seedTenant('RENEW', 'Renew');
    const { license } = await app.seedLicense(tenant.id, product.id, { expiresAt: at(7.5), customerEmail: 'renewer@customer.test' });
    await runExpiry();
    clock.advance(2 * DAY);
    await app.prisma.license.update({ where: { id: license.id }, data: { expiresAt: at(365 + 7.5) } });
    clock.advance(365 * DAY);
    await runExpiry();
    expect(peer.to('renewer@customer.test').map((message) => message.Subject)).toEqual([
      'Your Renew Studio license expires in 7 days',
      'Your Renew Studio license expires in 7 days',
    ]);
  });

  itWith(chromiumNeed)('the admin email renders in a browser (screenshot in test-output/)', async () => {
    const { tenant, product, domain } = await seedTenant('SHOT', 'Screenshot Inc');
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(1.4), customerEmail: 'shot@customer.test' });
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(7.3) });
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(30.1) });
    await runExpiry();
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 680, height: 900 } });
      mkdirSync('test-output', { recursive: true });
      await page.setContent(peer.to(`ada@${domain}`)[0].HtmlBody!, { waitUntil: 'load' });
      await page.screenshot({ path: path.join('test-output', 'expiry-admin.png'), fullPage: true });
      const text = await page.innerText('body');
      for (const expected of ['Licenses expiring soon', 'Expiring in 1 day · 1', 'Expiring in 7 days · 1', 'Expiring in 30 days · 1', 'in 1 day', 'in 7 days', 'in 30 days', '0 / 5']) {
        expect(text).toContain(expected);
      }
      // Every column header on one line, whole words (no "ACTIVATIO NS"), on a desktop client and on a phone.
      for (const width of [680, 375]) {
        await page.setViewportSize({ width, height: 900 });
        if (width === 375) await page.screenshot({ path: path.join('test-output', 'expiry-admin-375.png'), fullPage: true });
        for (const header of await page.locator('th').all()) {
          const label = `${await header.innerText()} at ${width} px`;
          expect((await header.boundingBox())!.height, label).toBeLessThan(40);
          expect(await header.evaluate((cell) => cell.scrollWidth <= cell.clientWidth), label).toBe(true);
        }
      }
      await page.setContent(peer.to('shot@customer.test')[0].HtmlBody!, { waitUntil: 'load' });
      await page.screenshot({ path: path.join('test-output', 'expiry-customer.png'), fullPage: true });
      expect(await page.innerText('body')).toContain('Screenshot Inc');
    } finally {
      await browser.close();
    }
  });
});

describe('at volume, isolated per tenant, resumable', () => {
  // Each test runs on its own day, so the day's run records start empty.
  const ctx = (now: Date, failpoint?: (job: string, tenantId: string) => void) => ({ db: app.deps.db, now, publicUrl: app.config.publicUrl, logger: app.deps.logger, failpoint });
  const run = (job: string, period: string) => app.prisma.jobRun.findUniqueOrThrow({ where: { job_period: { job, period } } });
  const record = (period: string, tenantId: string) => app.prisma.jobRunTenant.findUnique({ where: { job_period_tenantId: { job: 'expiry-notifications', period, tenantId } } });

  /** `count` licenses in one statement (support/seed.ts), read back. */
  async function bulkLicenses(tenantId: string, productId: string, count: number, expiresAt: (index: number) => Date, customerEmail?: (index: number) => string | null) {
    await seedLicensesInBulk(app.prisma, { tenantId, productId, count }, (index) => ({ maxActivations: 3, expiresAt: expiresAt(index), customerEmail: customerEmail?.(index) ?? null }));
    return app.prisma.license.findMany({ where: { tenantId, keyHint: { startsWith: 'BULK-' } }, select: { id: true, keyHint: true, expiresAt: true, customerEmail: true, status: true } });
  }

  it('one tenant failing is logged and retried with backoff; the other tenants get their emails', async () => {
    clock.set('2027-02-01T08:00:00.000Z');
    const now = clock.now();
    const tenants = await Promise.all(['ISOA', 'ISOB', 'ISOC'].map((prefix) => seedTenant(prefix, `Isolated ${prefix}`)));
    for (const { tenant, product } of tenants) await app.seedLicense(tenant.id, product.id, { expiresAt: at(7.3), customerEmail: `buyer@${tenant.keyPrefix.toLowerCase()}.test` });
    const broken = tenants[1].tenant.id;
    const first = await queueExpiryNotifications(
      ctx(now, (_job, tenantId) => {
        if (tenantId === broken) throw new Error('injected failure');
      }),
    );
    expect(first.run.failedTenants).toEqual([broken]);
    expect(first.run.finished).toBe(false);
    expect(app.logs.some((line) => line.includes('tenant failed in a scheduled run; retried later') && line.includes(broken) && line.includes('injected failure'))).toBe(true);
    const emailsOf = (tenantId: string) => app.prisma.emailOutbox.count({ where: { tenantId } });
    expect(await emailsOf(tenants[0].tenant.id)).toBe(3); // ada, bob, the customer
    expect(await emailsOf(tenants[2].tenant.id)).toBe(3);
    expect(await emailsOf(broken)).toBe(0);
    expect(await record('2027-02-01', broken)).toMatchObject({ status: 'failed', attempts: 1, lastError: 'injected failure', nextAttemptAt: new Date(now.getTime() + 60_000) });

    // Not due yet; then due: only the failed tenant is processed again, and the run finishes.
    expect(await resumeScheduledRuns(ctx(now))).toEqual([]);
    const [resumed] = await resumeScheduledRuns(ctx(new Date(now.getTime() + 61_000)));
    expect(resumed).toMatchObject({ job: 'expiry-notifications', period: '2027-02-01', mode: 'resume', tenants: 1, failedTenants: [], finished: true, notices: 1, adminEmails: 2, customerEmails: 1 });
    expect(await emailsOf(broken)).toBe(3);
    expect(await emailsOf(tenants[0].tenant.id)).toBe(3);
    expect(await record('2027-02-01', broken)).toMatchObject({ status: 'done', attempts: 2, lastError: null });
    expect((await run('expiry-notifications', '2027-02-01')).finishedAt).toEqual(new Date(now.getTime() + 61_000));
  });

  it('a tenant failing every time stops after a bounded number of attempts; the run still finishes', async () => {
    clock.set('2027-02-02T08:00:00.000Z');
    const { tenant, product } = await seedTenant('ALWAYS', 'Always failing');
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(1.2) });
    const failing = (_job: string, tenantId: string) => {
      if (tenantId === tenant.id) throw new Error('still broken');
    };
    let now = clock.now();
    await queueExpiryNotifications(ctx(now, failing));
    const delays: number[] = [];
    for (;;) {
      const next = (await record('2027-02-02', tenant.id))!;
      if (!next.nextAttemptAt) break;
      delays.push((next.nextAttemptAt.getTime() - now.getTime()) / 60_000);
      now = next.nextAttemptAt;
      await resumeScheduledRuns(ctx(now, failing));
    }
    expect(delays).toEqual([1, 2, 4, 8]);
    expect(await record('2027-02-02', tenant.id)).toMatchObject({ status: 'failed', attempts: 5 });
    expect((await run('expiry-notifications', '2027-02-02')).finishedAt).not.toBeNull();
    expect(await resumeScheduledRuns(ctx(new Date(now.getTime() + 3600_000)))).toEqual([]);
    expect(app.logs.some((line) => line.includes('no attempts left') && line.includes(tenant.id))).toBe(true);
  });

  it('streams thousands of licenses in keyset pages (ties included): the same notices as the plain definition', async () => {
    clock.set('2027-02-03T08:00:00.000Z');
    const now = clock.now();
    const { tenant, product } = await seedTenant('STREAM', 'Stream');
    const other = await seedTenant('STREAMB', 'Stream B');
    // More than two pages share one expiry instant; the rest spread over 0–35 days, some revoked.
    const tied = at(7.25);
    const licenses = await bulkLicenses(tenant.id, product.id, 3 * EXPIRY_BATCH + 37 + 400, (index) => (index < 3 * EXPIRY_BATCH + 37 ? tied : at((index * 0.0871) % 35)), (index) => (index % 3 ? `c${index}@stream.test` : null));
    await app.prisma.license.updateMany({ where: { tenantId: tenant.id, keyHint: { endsWith: '7' } }, data: { status: 'revoked', revokedAt: now } });
    await app.seedLicense(other.tenant.id, other.product.id, { expiresAt: at(30.5) });
    const report = await queueExpiryNotifications(ctx(now));

    const expected = licenses
      .filter((license) => !license.keyHint.endsWith('7'))
      .map((license) => ({ license, threshold: thresholdFor(daysUntil(license.expiresAt!, now)) }))
      .filter((item) => item.threshold !== null && item.license.expiresAt! > now);
    const notices = await app.prisma.expiryNotice.findMany({ where: { license: { tenantId: tenant.id } }, select: { licenseId: true, threshold: true } });
    const key = (id: string, threshold: number | null) => `${id}:${threshold}`;
    expect(notices.map((notice) => key(notice.licenseId, notice.threshold)).sort()).toEqual(expected.map((item) => key(item.license.id, item.threshold)).sort());
    expect(expected.length).toBeGreaterThan(2 * EXPIRY_BATCH);
    const customers = expected.filter((item) => item.license.customerEmail);
    expect(await app.prisma.emailOutbox.count({ where: { tenantId: tenant.id, kind: 'expiry-customer' } })).toBe(customers.length);
    expect(await app.prisma.emailOutbox.count({ where: { tenantId: tenant.id, kind: 'expiry-admin' } })).toBe(2);
    expect(report.customerEmails).toBeGreaterThanOrEqual(customers.length);
    // The customer email is filled into a template compiled once: the same escaping as a direct render.
    const sample = await app.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: customers[0].license.customerEmail! }, select: { html: true, subject: true } });
    expect(sample.html).toContain(`(<span style="font-family:Menlo,Consolas,monospace">${customers[0].license.keyHint}</span>) from Stream expires on`);
    expect(sample.html).not.toContain('KFSLOT');
    // A rerun the same day: nothing new.
    expect(await queueExpiryNotifications(ctx(now))).toMatchObject({ notices: 0, adminEmails: 0, customerEmails: 0 });
  });

  it('the admin email lists the 50 most urgent per threshold and counts the rest: 5,000 licenses stay far under Postmark’s 10 MB', async () => {
    clock.set('2027-02-04T08:00:00.000Z');
    const now = clock.now();
    const { tenant, product, domain } = await seedTenant('BIG', 'Big Vendor');
    await bulkLicenses(tenant.id, product.id, 5_000, (index) => at(6.2 + index / 4000));
    await queueExpiryNotifications(ctx(now));
    expect(await app.prisma.expiryNotice.count({ where: { license: { tenantId: tenant.id } } })).toBe(5_000);
    expect(await app.prisma.emailOutbox.count({ where: { tenantId: tenant.id } })).toBe(2);
    const mail = await app.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: `ada@${domain}` } });
    expect(mail.subject).toBe('Big Vendor: 5000 licenses expire soon, the first in 6 days');
    expect(Buffer.byteLength(mail.html) + Buffer.byteLength(mail.text)).toBeLessThan(300_000);
    const listed = mail.text.split('\n').filter((line) => line.startsWith('- Big Vendor Studio | BULK-'));
    expect(listed).toHaveLength(ADMIN_ROWS_PER_THRESHOLD);
    // Soonest first: the first 50 seeded.
    expect(listed.map((line) => line.split(' | ')[1])).toEqual(Array.from({ length: 50 }, (_, index) => `BULK-…-${String(index).padStart(5, '0')}`));
    // The heading follows the countdown of the licenses in the group (the first expires in 6 days, the last in 7), as the subject does.
    expect(mail.text).toContain('Expiring in 6–7 days (5000):');
    expect(mail.text).toContain('…and 4950 more: http://licensing.test/licenses?status=active&expiring=7');
    expect(mail.html).toContain('data-more="4950"');
    expect(mail.html).toContain('href="http://licensing.test/licenses?status=active&amp;expiring=7"');
  });

  it('a run interrupted after some tenants is finished by a resume: the rest exactly once, the done ones untouched', async () => {
    clock.set('2027-02-05T08:00:00.000Z');
    const now = clock.now();
    const period = '2027-02-05';
    const seeded: string[] = [];
    for (const prefix of ['RSA', 'RSB', 'RSC', 'RSD']) {
      const { tenant, product } = await seedTenant(prefix, `Resume ${prefix}`);
      await bulkLicenses(tenant.id, product.id, 30, (index) => at([1.5, 7.5, 30.5][index % 3]), (index) => `c${index}@${prefix.toLowerCase()}.test`);
      seeded.push(tenant.id);
    }
    const sorted = [...seeded].sort();
    // What a worker killed after two of these tenants leaves: their records done, no record for the rest,
    // the run unfinished with a lapsed lease.
    const done = new Set(sorted.slice(0, 2));
    await queueExpiryNotifications(ctx(now, (_job, tenantId) => {
      if (seeded.includes(tenantId) && !done.has(tenantId)) throw new Error('never reached');
    }));
    await app.prisma.jobRunTenant.deleteMany({ where: { job: 'expiry-notifications', period, tenantId: { in: sorted.slice(2) } } });
    await app.prisma.$executeRaw`UPDATE job_runs SET finished_at = NULL, next_attempt_at = ${now}, leased_until = clock_timestamp() + interval '1 minute' WHERE job = 'expiry-notifications' AND period = ${period}`;
    const before = await app.prisma.emailOutbox.findMany({ where: { tenantId: { in: [...done] } }, select: { id: true } });
    expect(before).toHaveLength(2 * (30 + 2));

    // While the lease is live nothing happens; once it lapsed, one resume processes exactly the two left.
    expect(await resumeScheduledRuns(ctx(now))).toEqual([]);
    await app.prisma.$executeRaw`UPDATE job_runs SET leased_until = clock_timestamp() - interval '1 second' WHERE job = 'expiry-notifications' AND period = ${period}`;
    const [resumed] = await resumeScheduledRuns(ctx(new Date(now.getTime() + 150_000)));
    expect(resumed).toMatchObject({ mode: 'resume', tenants: 2, finished: true, notices: 60, adminEmails: 4, customerEmails: 60 });
    for (const tenantId of seeded) {
      expect(await app.prisma.expiryNotice.count({ where: { license: { tenantId } } })).toBe(30);
      const emails = await app.prisma.emailOutbox.groupBy({ by: ['toAddress'], where: { tenantId }, _count: true });
      expect(emails).toHaveLength(32);
      for (const email of emails) expect(email._count).toBe(1);
    }
    expect((await app.prisma.emailOutbox.findMany({ where: { tenantId: { in: [...done] } }, select: { id: true } })).map((row) => row.id).sort()).toEqual(before.map((row) => row.id).sort());
    expect(await resumeScheduledRuns(ctx(new Date(now.getTime() + 300_000)))).toEqual([]);
  });

  it('housekeeping purges run records older than 35 days, not newer ones', async () => {
    const count = () => app.prisma.jobRunTenant.count({ where: { period: '2027-02-05' } });
    expect(await count()).toBeGreaterThan(0);
    const housekeeping = (now: Date) => housekeepingJob.run(jobContext({ ...app.deps, clock: clock.now }, createTransport(app.config, app.deps.logger), now));
    await housekeeping(new Date('2027-03-10T08:00:00.000Z'));
    expect(await count()).toBeGreaterThan(0);
    expect(await housekeeping(new Date('2027-03-13T08:00:00.000Z'))).toMatchObject({ runRecordsPurged: expect.any(Number) });
    expect(await count()).toBe(0);
    expect(await app.prisma.jobRun.count({ where: { period: '2027-02-05' } })).toBe(0);
  });
});

describe('on the embedded database (PGlite)', () => {
  it('the same run: isolated tenants, the retry, the claims and the outbox rows', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-expiry-pglite-'));
    const db = await openDatabase({ dataDir });
    try {
      const now = new Date('2027-03-01T08:00:00.000Z');
      const seed = seeder({ db, secrets: app.deps.secrets, now: () => now });
      const tenants: string[] = [];
      for (const prefix of ['EMA', 'EMB']) {
        const tenant = await seed.tenant({ name: `Embedded ${prefix}`, keyPrefix: prefix });
        await seed.user(tenant.id, { email: `ada@${prefix.toLowerCase()}.test` });
        const product = await seed.product(tenant.id, `Product ${prefix}`);
        for (const [index, days] of [1.5, 7.5, 30.5, 12].entries()) {
          await seed.license(tenant.id, product.id, { maxActivations: 1, expiresAt: new Date(now.getTime() + days * DAY), customerEmail: `c${index}@${prefix.toLowerCase()}.test` });
        }
        tenants.push(tenant.id);
      }
      const ctx = { db, now, publicUrl: 'http://licensing.test' };
      const first = await queueExpiryNotifications({ ...ctx, failpoint: (_job: string, tenantId: string) => { if (tenantId === tenants[1]) throw new Error('injected'); } });
      expect(first).toMatchObject({ notices: 3, adminEmails: 1, customerEmails: 3, run: { failedTenants: [tenants[1]], finished: false } });
      const [resumed] = await resumeScheduledRuns({ ...ctx, now: new Date(now.getTime() + 60_000) });
      expect(resumed).toMatchObject({ tenants: 1, finished: true, notices: 3, adminEmails: 1, customerEmails: 3 });
      expect(await db.prisma.emailOutbox.count()).toBe(8);
      expect(await db.prisma.expiryNotice.count()).toBe(6);
    } finally {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('exactly once across workers', () => {
  async function twoWorkers(env: Record<string, string> = {}) {
    const config = { ...app.config, ...env };
    const deps = { ...app.deps, config, clock: clock.now };
    const first = await startJobs(deps, { worker: true, processEvery: 100 });
    const second = await startJobs(deps, { worker: true, processEvery: 100 });
    return [first, second] as const;
  }
  const finishedRuns = (name: string) => app.logs.filter((line) => line.includes('"msg":"job finished"') && line.includes(`"job":"${name}"`)).length;

  async function scenario(workers: readonly [Jobs, Jobs]) {
    const { tenant, product, domain } = await seedTenant(`EX${randomBytes(2).toString('hex').toUpperCase()}`, 'Exactly');
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(30.4), customerEmail: 'once@customer.test' });
    await app.seedLicense(tenant.id, product.id, { expiresAt: at(7.4), customerEmail: 'twice@customer.test' });

    // Both processes registered the schedules: one stored schedule per job.
    const stored = await workers[0].agenda.queryJobs({ names: ['weekly-digest', 'expiry-notifications', 'email-delivery', 'housekeeping'] });
    expect(stored.jobs.filter((job) => job.type === 'single').map((job) => job.name).sort()).toEqual(['email-delivery', 'expiry-notifications', 'housekeeping', 'weekly-digest']);

    // The same run asked of both workers at once: both run it, concurrently.
    const before = finishedRuns('expiry-notifications');
    await Promise.all(workers.map((worker) => worker.runNow('expiry-notifications', clock.now())));
    await waitUntil(() => finishedRuns('expiry-notifications') === before + 2, { what: 'both workers to finish the run' });
    expect(peer.to(`ada@${domain}`)).toHaveLength(1);
    expect(peer.to(`bob@${domain}`)).toHaveLength(1);
    expect(peer.to('once@customer.test')).toHaveLength(1);
    expect(peer.to('twice@customer.test')).toHaveLength(1);
    expect(await app.prisma.emailOutbox.count({ where: { tenantId: tenant.id } })).toBe(4);
    return domain;
  }

  it('two Agenda instances on one PostgreSQL store: no duplicate, nothing lost', async () => {
    const workers = await twoWorkers();
    try {
      expect(workers[0].store).toBe('PostgreSQL (schema agenda, LISTEN/NOTIFY)');
      const domain = await scenario(workers);
      // The stored daily schedule comes due: exactly one of the two workers runs it.
      const before = finishedRuns('expiry-notifications');
      await app.deps.db.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = 'expiry-notifications' AND type = 'single'`, []);
      await waitUntil(() => finishedRuns('expiry-notifications') > before, { what: 'one worker to run the due schedule' });
      // Deliberately a fixed wait: this checks that the second worker does NOT also run it, and an absence
      // cannot be polled for. Both poll every 100 ms, so 500 ms gives the other one five chances.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(finishedRuns('expiry-notifications')).toBe(before + 1);
      const [schedule] = (await workers[0].schedules()).filter((job) => job.name === 'expiry-notifications');
      expect(schedule.lastFinishedAt).toBeInstanceOf(Date);
      expect(schedule.nextRunAt!.toISOString()).toMatch(/T08:00:00\.000Z$/);
      expect(peer.to(`ada@${domain}`)).toHaveLength(1);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  });

  it.skipIf(!process.env.MONGODB_URL)('two Agenda instances on one MongoDB store (MONGODB_URL): no duplicate, nothing lost', async () => {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/keyforge_test_${randomBytes(4).toString('hex')}`;
    const workers = await twoWorkers({ mongodbUrl: url.toString() });
    try {
      expect(workers[0].store).toMatch(/^MongoDB/);
      await scenario(workers);
    } finally {
      await workers[0].agenda.cancelAll();
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  });
});
