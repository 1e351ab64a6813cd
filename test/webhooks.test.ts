import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTransport } from '../server/src/jobs/email/transport.js';
import { expiryNotificationsJob } from '../server/src/jobs/expiry-notifications.js';
import { jobContext } from '../server/src/jobs/scheduler.js';
import { systemActor } from '../server/src/services/auth/actor.js';
import { createUser } from '../server/src/services/users.js';
import { DISABLE_AFTER, WEBHOOK_OUTBOX, claimDueWebhooks, purgeWebhookEvents, RETRY_DELAYS_MS, deliverDueWebhooks, send } from '../server/src/services/webhooks/delivery.js';
import { createWebhookEndpoint, updateWebhookEndpoint } from '../server/src/services/webhooks/endpoints.js';
import { emitEvent } from '../server/src/services/webhooks/events.js';
import { isForbiddenAddress } from '../server/src/services/webhooks/ssrf.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Outbound webhooks against a real local receiver (node:http on 127.0.0.1, reachable because this app runs with
// WEBHOOK_ALLOW_PRIVATE=true; the guard itself is tested with it off). Delivery runs are driven with a chosen `now`.

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let t: TestApp;
const clock = new TestClock();
let A: SeededTenant;
let B: SeededTenant;
let server: Server;
let receiverUrl: string;
const received: Received[] = [];
/** Status codes the receiver answers, in order; 200 once they run out. */
let answers: number[] = [];

const deliver = (now = clock.now(), allowPrivate = true) => deliverDueWebhooks({ db: t.deps.db, now, secrets: t.deps.secrets }, { allowPrivate, publicUrl: t.config.publicUrl });
const adminCtx = (tenant: SeededTenant) => adminContext(t, tenant);
/** The operator acting in a tenant (`pnpm cli user:create`): members with a chosen password are made this way. */
const operatorCtx = (tenant: SeededTenant) => ({ ...adminCtx(tenant), actor: systemActor(tenant.tenantId, 'system (cli)') });

async function createEndpoint(tenant: SeededTenant, input: { url?: string; eventTypes?: string[] } = {}) {
  const response = await t.gql(
    'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret endpoint { id url eventTypes enabled } } }',
    { input: { url: input.url ?? receiverUrl, eventTypes: input.eventTypes } },
    { token: tenant.admin.token },
  );
  expect(response.errors).toBeUndefined();
  return response.data.createWebhookEndpoint as { secret: string; endpoint: { id: string; url: string; eventTypes: string[]; enabled: boolean } };
}

const createLicense = async (tenant: SeededTenant) => {
  const response = await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id } } }', { input: { productId: tenant.product!.id, maxActivations: 1 } }, { token: tenant.admin.token });
  expect(response.errors).toBeUndefined();
  return response.data.createLicense as { key: string; license: { id: string } };
};

beforeAll(async () => {
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  ({ A, B } = await seedTwoTenants(t));
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = answers.shift() ?? 200;
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end(status === 200 ? 'ok' : `receiver says ${status} ${'x'.repeat(2000)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.close();
});
beforeEach(async () => {
  received.length = 0;
  answers = [];
  // Each test starts with no endpoint and nothing queued.
  await t.prisma.webhookEndpoint.deleteMany({});
  await t.prisma.webhookEvent.deleteMany({});
});

describe('webhook delivery', () => {
  it('signs like Standard Webhooks: the standardwebhooks package verifies the request; the payload has the documented fields', async () => {
    const { secret, endpoint } = await createEndpoint(A, { eventTypes: ['LICENSE_CREATED'] });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint).toMatchObject({ enabled: true, eventTypes: ['LICENSE_CREATED'] });
    const { license } = await createLicense(A);
    expect(await deliver()).toMatchObject({ succeeded: 1 });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request.headers['content-type']).toBe('application/json');
    const payload = new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as Record<string, any>;
    expect(payload).toMatchObject({ id: request.headers['webhook-id'], type: 'license.created', tenantId: A.tenantId, data: { licenseId: license.id, productId: A.product!.id, status: 'active', maxActivations: 1 } });
    expect(new Date(payload.createdAt).toISOString()).toBe(clock.now().toISOString());
    // A wrong secret fails verification.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(request.body, request.headers as Record<string, string>)).toThrow();
    // The secret is stored encrypted, and never logged.
    const stored = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
    expect(stored.secretEncrypted).not.toContain(secret.slice(6));
    expect(t.deps.secrets.decrypt(stored.secretEncrypted)).toBe(secret);
    expect(t.logs.join('')).not.toContain(secret.slice(6, 30));
    // The filter: an activation event is not sent to this endpoint.
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(1);
  });

  it('retries with backoff until the receiver recovers, always with the same webhook-id; the log shows code, time and the first 1 KB', async () => {
    const { endpoint } = await createEndpoint(A);
    await createLicense(A);
    answers = [500, 503];
    const start = clock.now().getTime();
    expect(await deliver(new Date(start))).toMatchObject({ retrying: 1 });
    let delivery = await t.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, responseCode: 500 });
    expect(delivery.responseBodyExcerpt).toHaveLength(1024);
    expect(delivery.responseBodyExcerpt).toMatch(/^receiver says 500/);
    expect(delivery.nextAttemptAt.getTime()).toBe(start + RETRY_DELAYS_MS[0]);
    // Not due yet: nothing sent.
    expect(await deliver(new Date(start + RETRY_DELAYS_MS[0] - 1000))).toMatchObject({ succeeded: 0, retrying: 0 });
    expect(received).toHaveLength(1);
    expect(await deliver(new Date(start + RETRY_DELAYS_MS[0]))).toMatchObject({ retrying: 1 });
    delivery = await t.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
    expect(delivery.nextAttemptAt.getTime()).toBe(start + RETRY_DELAYS_MS[0] + RETRY_DELAYS_MS[1]);
    expect(await deliver(new Date(start + RETRY_DELAYS_MS[0] + RETRY_DELAYS_MS[1]))).toMatchObject({ succeeded: 1 });
    expect(received).toHaveLength(3);
    expect(new Set(received.map((request) => request.headers['webhook-id'])).size).toBe(1);
    expect(new Set(received.map((request) => request.body)).size).toBe(1);
    // Delivered: later runs send nothing more.
    expect(await deliver(new Date(start + 86_400_000))).toMatchObject({ succeeded: 0, retrying: 0, failed: 0 });
    expect(received).toHaveLength(3);

    const log = await t.gql(
      'query($id: ID!) { webhookDeliveries(endpointId: $id, first: 10) { totalCount nodes { id eventId eventType status attempts responseCode responseTimeMs responseBodyExcerpt } } }',
      { id: endpoint.id },
      { token: A.admin.token },
    );
    expect(log.errors).toBeUndefined();
    expect(log.data.webhookDeliveries.nodes).toEqual([
      expect.objectContaining({ eventId: received[0].headers['webhook-id'], eventType: 'LICENSE_CREATED', status: 'SUCCEEDED', attempts: 3, responseCode: 200, responseBodyExcerpt: 'ok' }),
    ]);
    expect(log.data.webhookDeliveries.nodes[0].responseTimeMs).toBeGreaterThanOrEqual(0);
  });

  it('a 4xx other than 408/429 is not retried; 408, 429 and 5xx are, up to the last attempt (~24 h)', async () => {
    const { endpoint } = await createEndpoint(A, { eventTypes: ['LICENSE_CREATED'] });
    await createLicense(A);
    answers = [400];
    expect(await deliver()).toMatchObject({ failed: 1 });
    expect(await t.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } })).toMatchObject({ status: 'failed', attempts: 1, responseCode: 400 });

    await createLicense(A);
    answers = [408, 429, ...Array(WEBHOOK_OUTBOX.maxAttempts).fill(500)];
    let at = clock.now().getTime();
    for (let attempt = 1; attempt <= WEBHOOK_OUTBOX.maxAttempts; attempt++) {
      const report = await deliver(new Date(at));
      expect(report, `attempt ${attempt}`).toMatchObject(attempt < WEBHOOK_OUTBOX.maxAttempts ? { retrying: 1 } : { failed: 1 });
      at += RETRY_DELAYS_MS[attempt - 1] ?? 0;
    }
    expect(RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0) / 3_600_000).toBeGreaterThan(20);
    const last = await t.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id, status: 'failed', attempts: WEBHOOK_OUTBOX.maxAttempts } });
    expect(last.responseCode).toBe(500);
    expect(received.slice(1).map((request) => request.headers['webhook-id'])).toEqual(Array(WEBHOOK_OUTBOX.maxAttempts).fill(last.eventId));
  });

  it('a lease keeps a claimed delivery from a second worker; a lapsed lease sends again with the same webhook-id (at least once)', async () => {
    await createEndpoint(A, { eventTypes: ['LICENSE_CREATED'] });
    await createLicense(A);
    const [first, second] = await Promise.all([deliver(), deliver()]);
    expect(first.succeeded + second.succeeded).toBe(1);
    expect(received).toHaveLength(1);
    // A worker claims the next event and dies: nobody sends it until its lease lapses, then it goes out once.
    await createLicense(A);
    const [claimed] = await claimDueWebhooks({ db: t.deps.db, now: clock.now() });
    expect(await deliver()).toMatchObject({ succeeded: 0 });
    expect(await deliver(new Date(clock.now().getTime() + WEBHOOK_OUTBOX.leaseMs))).toMatchObject({ succeeded: 1 });
    expect(received.map((request) => request.headers['webhook-id'])).toEqual([received[0].headers['webhook-id'], claimed.eventId]);
  });

  it('after repeated failed events the endpoint is disabled and the admins get an email; enabling it again resets the count', async () => {
    const { endpoint } = await createEndpoint(A, { eventTypes: ['USER_CREATED'] });
    answers = Array(DISABLE_AFTER).fill(410);
    for (let n = 0; n < DISABLE_AFTER; n++) await createUser(operatorCtx(A), { email: `hire${n}@acme.test`, password: 'correct horse battery', role: 'ReadOnly' });
    const report = await deliver();
    expect(report).toMatchObject({ failed: DISABLE_AFTER, endpointsDisabled: 1 });
    const disabled = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
    expect(disabled).toMatchObject({ enabled: false, consecutiveFailures: DISABLE_AFTER });
    expect(disabled.disabledReason).toMatch(/HTTP 410/);
    const emails = await t.prisma.emailOutbox.findMany({ where: { tenantId: A.tenantId, kind: 'webhook-disabled' } });
    expect(emails.map((email) => email.toAddress)).toEqual([A.admin.email]);
    expect(emails[0].text).toContain(receiverUrl);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, action: 'DisableWebhookEndpoint', entityId: endpoint.id } })).toBe(1);
    // Disabled: new events are not queued for it.
    await createUser(operatorCtx(A), { email: 'late@acme.test', password: 'correct horse battery', role: 'ReadOnly' });
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(DISABLE_AFTER);

    const enabled = await t.gql('mutation($input: UpdateWebhookEndpointInput!) { updateWebhookEndpoint(input: $input) { endpoint { enabled consecutiveFailures disabledReason } } }', { input: { id: endpoint.id, enabled: true } }, { token: A.admin.token });
    expect(enabled.data.updateWebhookEndpoint.endpoint).toEqual({ enabled: true, consecutiveFailures: 0, disabledReason: null });
    // Resend one of the failed deliveries: delivered with its original event id.
    const failed = await t.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id, status: 'failed' } });
    const resent = await t.gql('mutation($input: ResendWebhookDeliveryInput!) { resendWebhookDelivery(input: $input) { delivery { status attempts } } }', { input: { id: failed.id } }, { token: A.admin.token });
    expect(resent.data.resendWebhookDelivery.delivery).toEqual({ status: 'PENDING', attempts: 0 });
    received.length = 0;
    expect(await deliver()).toMatchObject({ succeeded: 1 });
    expect(received.map((request) => request.headers['webhook-id'])).toEqual([failed.eventId]);
  });

  const SEND_TEST = 'mutation($input: SendTestWebhookEventInput!) { sendTestWebhookEvent(input: $input) { delivery { eventType status attempts responseCode } } }';

  it('"Send test event" goes out at once (no delivery run needed) and reaches only that endpoint, whatever its filter', async () => {
    const { endpoint, secret } = await createEndpoint(A, { eventTypes: ['LICENSE_REVOKED'] });
    const other = await createEndpoint(A);
    const response = await t.gql(SEND_TEST, { input: { endpointId: endpoint.id } }, { token: A.admin.token });
    expect(response.data.sendTestWebhookEvent.delivery).toEqual({ eventType: 'WEBHOOK_TEST', status: 'SUCCEEDED', attempts: 1, responseCode: 200 });
    expect(received).toHaveLength(1);
    expect(new Webhook(secret).verify(received[0].body, received[0].headers as Record<string, string>)).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
    // Nothing is left for the run, and the other endpoint got nothing.
    expect(await deliver()).toMatchObject({ succeeded: 0, retrying: 0, failed: 0 });
    expect(received).toHaveLength(1);
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: other.endpoint.id } })).toBe(0);
  });

  it('a test event the receiver refuses with a 5xx answers PENDING with the code, and the runs retry it', async () => {
    const { endpoint } = await createEndpoint(A);
    answers = [503];
    const response = await t.gql(SEND_TEST, { input: { endpointId: endpoint.id } }, { token: A.admin.token });
    expect(response.data.sendTestWebhookEvent.delivery).toEqual({ eventType: 'WEBHOOK_TEST', status: 'PENDING', attempts: 1, responseCode: 503 });
    expect(await deliver(new Date(clock.now().getTime() + RETRY_DELAYS_MS[0]))).toMatchObject({ succeeded: 1 });
    expect(received).toHaveLength(2);
  });

  it('creating (or re-pointing) an endpoint at an internal address warns that deliveries will be refused; allowed, it does not', async () => {
    const ctx = adminCtx(A);
    const guarded = { allowPrivate: false };
    for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::7f00:1]/hook', 'http://169.254.169.254/latest', 'http://[::ffff:0:a00:1]/']) {
      const { endpoint, warning } = await createWebhookEndpoint(ctx, { url }, guarded);
      expect(warning, url).toMatch(/^Deliveries to this endpoint will be refused: .* is an internal address .*WEBHOOK_ALLOW_PRIVATE=true/);
      await t.prisma.webhookEndpoint.delete({ where: { id: endpoint.id } });
    }
    expect((await createWebhookEndpoint(ctx, { url: 'http://localhost:9/hook' }, guarded)).warning).toMatch(/localhost resolves to (127\.0\.0\.1|::1), which is an internal address/);
    // A public literal is not looked up and gets no warning; nor does anything when private targets are allowed.
    const { endpoint: public_, warning } = await createWebhookEndpoint(ctx, { url: 'https://8.8.8.8/hook' }, guarded);
    expect(warning).toBeNull();
    expect((await createWebhookEndpoint(ctx, { url: 'http://127.0.0.1:9/hook' }, { allowPrivate: true })).warning).toBeNull();
    // Re-pointing warns; a change that keeps the URL does not.
    expect((await updateWebhookEndpoint(ctx, public_.id, { url: 'http://10.0.0.7/hook' }, guarded)).warning).toMatch(/10\.0\.0\.7 is an internal address/);
    expect((await updateWebhookEndpoint(ctx, public_.id, { enabled: false }, guarded)).warning).toBeNull();
    // Over GraphQL the payload carries it (this app allows private targets: null).
    const created = await t.gql('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { warning endpoint { id } } }', { input: { url: receiverUrl } }, { token: A.admin.token });
    expect(created.data.createWebhookEndpoint.warning).toBeNull();
  });

  it('seats exhausted is throttled: many rejected activations give one event per license per hour', async () => {
    await createEndpoint(A, { eventTypes: ['LICENSE_SEATS_EXHAUSTED', 'ACTIVATION_CREATED'] });
    const { key, license } = await createLicense(A);
    expect((await t.activate({ licenseKey: key, deviceId: 'device-1' })).json.isValid).toBe(true);
    for (const device of ['device-2', 'device-3', 'device-4']) expect((await t.activate({ licenseKey: key, deviceId: device })).json.errorCode).toBe('SeatsExhausted');
    const events = await t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId }, orderBy: { createdAt: 'asc' } });
    expect(events.filter((event) => event.type === 'license.seats_exhausted')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'activation.created')).toHaveLength(1);
    clock.advance(3_600_000);
    expect((await t.activate({ licenseKey: key, deviceId: 'device-5' })).json.errorCode).toBe('SeatsExhausted');
    expect(await t.prisma.webhookEvent.count({ where: { type: 'license.seats_exhausted', body: { contains: license.id } } })).toBe(2);
    clock.advance(-3_600_000); // back, so the seeded sessions' access tokens stay valid for the next tests
  });

  it('the expiry job emits license.expiring with the email thresholds, once per notice (a rerun adds nothing)', async () => {
    const { endpoint } = await createEndpoint(A, { eventTypes: ['LICENSE_EXPIRING'] });
    const expiresAt = new Date(clock.now().getTime() + 7 * 86_400_000).toISOString();
    const created = await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { license { id } } }', { input: { productId: A.product!.id, maxActivations: 1, expiresAt } }, { token: A.admin.token });
    const licenseId = created.data.createLicense.license.id;
    const run = () => expiryNotificationsJob.run(jobContext({ ...t.deps, clock: clock.now }, createTransport(t.config, t.deps.logger), clock.now()));
    await run();
    await run();
    const events = await t.prisma.webhookEvent.findMany({ where: { type: 'license.expiring' } });
    expect(events.map((event) => JSON.parse(event.body).data)).toEqual([expect.objectContaining({ licenseId, expiresAt, daysRemaining: 7 })]);
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(1);
    await deliver();
    expect(received.map((request) => JSON.parse(request.body).type)).toEqual(['license.expiring']);
  });

  it('the expiry job emits license.expired once for a license that expired since its last run (a rerun adds nothing)', async () => {
    await createEndpoint(A, { eventTypes: ['LICENSE_EXPIRED'] });
    const expiresAt = new Date(clock.now().getTime() + 3_600_000);
    const created = await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { license { id } } }', { input: { productId: A.product!.id, maxActivations: 1, expiresAt: expiresAt.toISOString() } }, { token: A.admin.token });
    const licenseId = created.data.createLicense.license.id;
    const run = (now: Date) => expiryNotificationsJob.run(jobContext({ ...t.deps, clock: () => now }, createTransport(t.config, t.deps.logger), now));
    await run(clock.now()); // not expired yet
    expect(await t.prisma.webhookEvent.count({ where: { type: 'license.expired' } })).toBe(0);
    const nextDay = new Date(clock.now().getTime() + 86_400_000);
    await run(nextDay);
    await run(nextDay);
    const events = await t.prisma.webhookEvent.findMany({ where: { type: 'license.expired' } });
    expect(events.map((event) => JSON.parse(event.body).data)).toEqual([expect.objectContaining({ licenseId, expiresAt: expiresAt.toISOString() })]);
  });

  it('housekeeping purges events older than 35 days with nothing pending (their deliveries with them)', async () => {
    const { endpoint } = await createEndpoint(A, { eventTypes: ['LICENSE_CREATED'] });
    await createLicense(A);
    await deliver();
    await createLicense(A); // still pending
    const later = new Date(clock.now().getTime() + 36 * 86_400_000);
    expect(await purgeWebhookEvents({ db: t.deps.db, now: later })).toBe(1);
    expect(await t.prisma.webhookDelivery.findMany({ where: { endpointId: endpoint.id }, select: { status: true } })).toEqual([{ status: 'pending' }]);
  });

  it('events are written in the transaction of the change: a change that fails writes no event', async () => {
    const { endpoint } = await createEndpoint(A);
    await expect(
      t.prisma.$transaction(async (tx) => {
        await emitEvent(tx, A.tenantId, 'license.updated', { licenseId: 'x' }, clock.now());
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    // A refused service call (duplicate user) writes neither the user nor an event.
    await expect(createUser(operatorCtx(A), { email: A.admin.email, password: 'correct horse battery', role: 'ReadOnly' })).rejects.toMatchObject({ code: 'Conflict' });
    expect(await t.prisma.webhookEvent.count()).toBe(0);
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(0);
  });
});

describe('license lifecycle events', () => {
  it('suspend, reinstate, renew and transfer are delivered with the license and the change', async () => {
    const { secret } = await createEndpoint(A, { eventTypes: ['LICENSE_SUSPENDED', 'LICENSE_REINSTATED', 'LICENSE_RENEWED', 'LICENSE_TRANSFERRED'] });
    const { license } = await createLicense(A);
    await t.prisma.license.update({ where: { id: license.id }, data: { expiresAt: new Date(clock.now().getTime() + 30 * 86_400_000) } }); // renewable
    const later = new Date(clock.now().getTime() + 400 * 86_400_000).toISOString();
    const steps: [string, Record<string, unknown>][] = [
      ['suspendLicense', {}],
      ['reinstateLicense', {}],
      ['renewLicense', { expiresAt: later }],
      ['transferLicense', { customerEmail: 'new-owner@customer.test' }],
    ];
    for (const [mutation, input] of steps) {
      const name = `${mutation[0].toUpperCase()}${mutation.slice(1)}Input`;
      const response = await t.gql(`mutation($input: ${name}!) { ${mutation}(input: $input) { license { id } } }`, { input: { id: license.id, ...input } }, { token: A.admin.token });
      expect(response.errors, mutation).toBeUndefined();
    }
    expect(await deliver()).toMatchObject({ succeeded: 4 });
    const payloads = received.map((request) => new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as Record<string, any>);
    expect(payloads.map((payload) => payload.type).sort()).toEqual(['license.reinstated', 'license.renewed', 'license.suspended', 'license.transferred']);
    const byType = Object.fromEntries(payloads.map((payload) => [payload.type, payload.data]));
    expect(byType['license.suspended']).toMatchObject({ licenseId: license.id, status: 'suspended' });
    expect(byType['license.reinstated']).toMatchObject({ licenseId: license.id, status: 'active' });
    expect(byType['license.renewed']).toMatchObject({ expiresAt: later });
    expect(byType['license.transferred']).toMatchObject({ customerEmail: 'new-owner@customer.test', changes: { after: { customerEmail: 'new-owner@customer.test' } } });
  });
});

describe('tenants without webhooks', () => {
  it('pay nothing: no event is stored when no enabled endpoint subscribes to its type', async () => {
    await createLicense(A); // no endpoint at all
    const { endpoint } = await createEndpoint(A);
    await t.prisma.webhookEndpoint.update({ where: { id: endpoint.id }, data: { enabled: false } });
    await createLicense(A); // a disabled endpoint
    expect(await t.prisma.webhookEvent.count()).toBe(0);
    await t.prisma.webhookEndpoint.update({ where: { id: endpoint.id }, data: { enabled: true } });
    await createLicense(A);
    expect(await t.prisma.webhookEvent.count({ where: { type: 'license.created' } })).toBe(1);
  });
});

describe('endpoint limit', () => {
  it('a company has at most 20 endpoints, even when created concurrently', async () => {
    const create = (i: number) =>
      t.gql('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }', { input: { url: `${receiverUrl}/${i}` } }, { token: A.admin.token });
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => create(i)));
    expect(answers.filter((answer) => !answer.errors)).toHaveLength(20);
    expect(answers.filter((answer) => answer.errors?.[0].extensions?.code === 'Conflict')).toHaveLength(4);
    expect(await t.prisma.webhookEndpoint.count({ where: { tenantId: A.tenantId } })).toBe(20);
    expect(await t.prisma.webhookEndpoint.count({ where: { tenantId: B.tenantId } })).toBe(0);
  });
});

describe('deleting an endpoint', () => {
  it("answers the deleted endpoint with the console's selection (endpoint { id }), and the row and its deliveries are gone", async () => {
    const { endpoint } = await createEndpoint(A);
    await emitEvent(t.deps.db.prisma, A.tenantId, 'license.created', { test: true }, clock.now());
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(1);
    const response = await t.gql('mutation DeleteWebhookEndpoint($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { endpoint { id } } }', { id: endpoint.id }, { token: A.admin.token });
    expect(response.errors).toBeUndefined();
    expect(response.data.deleteWebhookEndpoint).toEqual({ endpoint: { id: endpoint.id } });
    expect(await t.prisma.webhookEndpoint.count({ where: { id: endpoint.id } })).toBe(0);
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(0);
    // Every field of the type resolves from the deleted row as well.
    const second = await createEndpoint(A);
    const full = await t.gql('mutation($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { endpoint { id url eventTypes enabled consecutiveFailures disabledReason createdAt updatedAt } } }', { id: second.endpoint.id }, { token: A.admin.token });
    expect(full.errors).toBeUndefined();
    expect(full.data.deleteWebhookEndpoint.endpoint).toMatchObject({ id: second.endpoint.id, url: receiverUrl, enabled: true });
  });
});

describe('tenant isolation', () => {
  it("another company cannot list, change or read the deliveries of an endpoint; a company's events never reach another's endpoints", async () => {
    const mine = await createEndpoint(A);
    const theirs = await createEndpoint(B, { url: `${receiverUrl}/b` });
    await createLicense(A);
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: theirs.endpoint.id } })).toBe(0);
    expect(await t.prisma.webhookDelivery.count({ where: { endpointId: mine.endpoint.id } })).toBe(1);
    await deliver();
    expect(received.map((request) => request.headers['webhook-id'])).toHaveLength(1);
    expect(JSON.parse(received[0].body).tenantId).toBe(A.tenantId);

    const list = await t.gql('{ webhookEndpoints(first: 10) { totalCount nodes { id } } }', {}, { token: B.admin.token });
    expect(list.data.webhookEndpoints).toEqual({ totalCount: 1, nodes: [{ id: theirs.endpoint.id }] });
    const update = await t.gql('mutation($input: UpdateWebhookEndpointInput!) { updateWebhookEndpoint(input: $input) { endpoint { id } } }', { input: { id: mine.endpoint.id, url: 'https://evil.test/' } }, { token: B.admin.token });
    expect(update.errors?.[0].extensions?.code).toBe('NotFound');
    const deliveries = await t.gql('query($id: ID!) { webhookDeliveries(endpointId: $id) { totalCount } }', { id: mine.endpoint.id }, { token: B.admin.token });
    expect(deliveries.errors?.[0].extensions?.code).toBe('NotFound');
    for (const mutation of ['deleteWebhookEndpoint', 'rotateWebhookSecret']) {
      const name = `${mutation[0].toUpperCase()}${mutation.slice(1)}Input`;
      const response = await t.gql(`mutation($input: ${name}!) { ${mutation}(input: $input) { endpoint { id } } }`, { input: { id: mine.endpoint.id } }, { token: B.admin.token });
      expect(response.errors?.[0].extensions?.code, mutation).toBe('NotFound');
    }
    expect(await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: mine.endpoint.id } })).toMatchObject({ url: receiverUrl });
  });

  it('a read-only member is refused (GraphQL; the services: service-authorization.test.ts)', async () => {
    const list = await t.gql('{ webhookEndpoints(first: 10) { totalCount } }', {}, { token: A.readOnly.token });
    expect(list.errors?.[0].extensions?.code).toBe('Forbidden');
  });
});

describe('SSRF guard', () => {
  it('refuses non-http(s) URLs at creation with a field error', async () => {
    for (const url of ['ftp://hooks.acme.test/', 'file:///etc/passwd', 'not a url']) {
      const response = await t.gql('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { secret } }', { input: { url } }, { token: A.admin.token });
      expect(response.errors?.[0].extensions?.fields, url).toHaveProperty('url');
    }
  });

  it('with WEBHOOK_ALLOW_PRIVATE off, loopback, private, link-local and unique-local targets are refused, never contacted', async () => {
    const port = (server.address() as AddressInfo).port;
    for (const url of [`http://127.0.0.1:${port}/`, `http://[::1]:${port}/`, `http://localhost:${port}/`, 'http://10.1.2.3/', 'http://169.254.169.254/latest/meta-data', 'http://192.168.1.1/', 'http://[fd00::1]/', 'http://[::ffff:127.0.0.1]/', 'http://0.0.0.0/']) {
      const outcome = await send(url, `whsec_${Buffer.alloc(32).toString('base64')}`, '00000000-0000-4000-8000-000000000000', '{}', false);
      expect(outcome, url).toMatchObject({ kind: 'failed', code: null });
      expect((outcome as { error: string }).error, url).toMatch(/refused/);
    }
    expect(received).toHaveLength(0);
    // With the setting on, a host name goes through the same resolving hook and is reached.
    expect(await send(`http://localhost:${port}/`, `whsec_${Buffer.alloc(32).toString('base64')}`, '00000000-0000-4000-8000-000000000000', '{}', true)).toMatchObject({ kind: 'succeeded', code: 200 });
    received.length = 0;

    // Through the delivery run: failed at once, not retried.
    const { endpoint } = await createEndpoint(A, { eventTypes: ['LICENSE_CREATED'] });
    await createLicense(A);
    expect(await deliver(clock.now(), false)).toMatchObject({ failed: 1 });
    expect(received).toHaveLength(0);
    expect((await t.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } })).lastError).toMatch(/refused.*WEBHOOK_ALLOW_PRIVATE/);
  });

  it('classifies addresses (v4, v6, IPv4-mapped v6)', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1']) {
      expect(isForbiddenAddress(address), address).toBe(true);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isForbiddenAddress(address), address).toBe(false);
  });
});
