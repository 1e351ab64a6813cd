import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTransport } from '../server/src/jobs/email/transport.js';
import { expiryNotificationsJob } from '../server/src/jobs/expiry-notifications.js';
import { jobContext, startJobs, type Jobs } from '../server/src/jobs/scheduler.js';
import { thresholdFor } from '../server/src/services/notifications/expiry.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';

const START = '2026-06-01T08:00:00.000Z';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

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
  it('each fires within one day either side of 30, 7 and 1 days', () => {
    expect([31.2, 30.99, 30, 29, 28.99, 8, 7.5, 6, 5.9, 2, 1.99, 1, 0.01].map(thresholdFor)).toEqual([null, 30, 30, 30, null, null, 7, 7, null, null, 1, 1, 1]);
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
    expect(adminMail[1].TextBody).toContain(`- Acme Studio | ${license.keyHint} | Jul 6, 2026 (in 7 days) | 2/3 activations`);
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

  it.skipIf(!existsSync(CHROMIUM))('the admin email renders in a browser (screenshot in test-output/)', async () => {
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
      await page.setContent(peer.to('shot@customer.test')[0].HtmlBody!, { waitUntil: 'load' });
      await page.screenshot({ path: path.join('test-output', 'expiry-customer.png'), fullPage: true });
      expect(await page.innerText('body')).toContain('Screenshot Inc');
    } finally {
      await browser.close();
    }
  });
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
  async function waitFor(condition: () => boolean | Promise<boolean>, ms = 15_000) {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error('timed out waiting');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

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
    await waitFor(() => finishedRuns('expiry-notifications') === before + 2);
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
      expect(workers[0].store).toBe('PostgreSQL (schema agenda)');
      const domain = await scenario(workers);
      // The stored daily schedule comes due: exactly one of the two workers runs it.
      const before = finishedRuns('expiry-notifications');
      await app.deps.db.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = 'expiry-notifications' AND type = 'single'`, []);
      await waitFor(async () => finishedRuns('expiry-notifications') > before);
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
