import path from 'node:path';
import type { Page } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN, chooseOption, confirmIdentity, type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';

// Settings → Payments in Chromium against the real server: the admin connects Stripe with its signing secret, maps a
// Stripe price to a plan, a signed purchase is delivered to the webhook URL the page shows, the page lists it as
// applied and the license exists; disconnecting asks first, and afterwards the provider's deliveries are refused.

const chromiumNeed = needChromium();
const SECRET = 'whsec_e2e_0123456789abcdef';
let app: ConsoleE2e;
reportServerOnFailure(() => app);
let page: Page;

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  app = await startConsoleE2e('payments', chromiumNeed.path);
  page = await app.newPage(1280);
  const { createProduct } = await app.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Studio' } });
  await app.gql('mutation($input: CreatePlanInput!) { createPlan(input: $input) { plan { id } } }', { input: { productId: createProduct.product.id, name: 'Pro yearly', duration: 'P1Y', maxActivations: 3 } });
}, 300_000);
afterAll(() => app?.stop());

/** A Stripe `invoice.paid` for a new subscription, as Stripe signs and sends it to `webhookUrl` (its path, on this server). */
async function deliverPurchase(webhookUrl: string, eventId: string) {
  const periodEnd = Math.floor(Date.now() / 1000) + 365 * 86_400;
  const payload = JSON.stringify({
    id: eventId,
    object: 'event',
    api_version: '2025-08-27.basil',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: 'invoice.paid',
    data: {
      object: {
        id: 'in_e2e_1',
        object: 'invoice',
        billing_reason: 'subscription_create',
        customer: 'cus_e2e',
        customer_email: 'buyer@e2e.example',
        status: 'paid',
        payment_intent: 'pi_e2e_1',
        parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_e2e', metadata: {} } },
        lines: { object: 'list', has_more: false, data: [{ id: 'il_e2e_1', object: 'line_item', quantity: 2, period: { start: periodEnd - 365 * 86_400, end: periodEnd }, pricing: { type: 'price_details', price_details: { price: 'price_pro_yearly', product: 'prod_e2e' } } }] },
      },
    },
  });
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });
  return fetch(`${app.server.url}${new URL(webhookUrl).pathname}`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, body: payload });
}

describeWith(chromiumNeed)('payments in Chromium', () => {
  it('connects Stripe, maps a price to a plan, shows a delivered purchase as applied, and asks before disconnecting', async () => {
    await signInAsAdmin(page);
    await page.goto('/settings/payments');
    await page.getByText('No payment provider connected').waitFor();

    await page.getByRole('button', { name: 'Connect a provider' }).click();
    const connect = page.getByRole('dialog', { name: 'Connect a payment provider' });
    await connect.getByLabel(/^Signing secret/).fill(SECRET);
    await connect.getByRole('button', { name: 'Connect' }).click();
    // Connecting a provider asks for a recent sign-in (docs/security.md); a fresh one may already count.
    const card = page.getByRole('heading', { name: 'Stripe', level: 3 });
    await card.or(page.getByRole('dialog', { name: 'Confirm it is you' })).waitFor();
    if (!(await card.isVisible())) await confirmIdentity(page, ADMIN.password);
    await card.waitFor();
    await connect.waitFor({ state: 'hidden' });
    expect(await page.getByText(SECRET).count(), 'the secret is never shown again').toBe(0);
    const webhookUrl = (await page.getByTestId('payment-webhook-url').textContent())!.trim();
    expect(webhookUrl).toMatch(/\/api\/v1\/payments\/[0-9a-f-]{36}\/webhook$/);

    await page.getByLabel(/^Stripe price id/).fill('price_pro_yearly');
    await chooseOption(page, page.getByRole('textbox', { name: 'Plan' }), 'Acme Studio — Pro yearly');
    await page.getByRole('button', { name: 'Map price' }).click();
    await page.getByRole('cell', { name: 'price_pro_yearly', exact: true }).waitFor();

    const delivered = await deliverPurchase(webhookUrl, 'evt_e2e_purchase');
    expect(delivered.status).toBe(200);
    expect(await delivered.json()).toEqual({ received: true, outcome: 'applied' });
    await page.reload();
    await page.getByText('evt_e2e_purchase').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'evt_e2e_purchase' });
    expect(await row.getByText('applied').count()).toBe(1);
    expect(await row.getByText('license created, key emailed').count()).toBe(1);
    const { licenses } = await app.gql('query { licenses { nodes { customerEmail maxActivations plan { name } } } }', {});
    expect(licenses.nodes).toEqual([{ customerEmail: 'buyer@e2e.example', maxActivations: 6, plan: { name: 'Pro yearly' } }]);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'payments-01-connected.png'), fullPage: true });
    // The event links to the license it created.
    await row.getByRole('link', { name: 'Open the license' }).click();
    await page.getByText('buyer@e2e.example').first().waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/licenses\/[0-9a-f-]{36}$/);
    await page.goto('/settings/payments');

    // Disconnecting asks first; cancelling keeps it, confirming removes it and the provider's deliveries are refused.
    await page.getByRole('button', { name: 'Disconnect' }).click();
    const confirm = page.getByRole('dialog', { name: 'Disconnect Stripe?' });
    await confirm.getByText('Licenses already sold stay as they are').waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await confirm.getByRole('button', { name: 'Disconnect' }).click();
    await page.getByText('No payment provider connected').waitFor();
    expect((await deliverPurchase(webhookUrl, 'evt_e2e_after')).status).toBe(404);
    expect((await app.gql('query { licenses { totalCount } }', {})).licenses.totalCount).toBe(1);
  });
});
