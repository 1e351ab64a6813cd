import { z } from 'zod';
import { generateLicenseKey } from '../../crypto/license-key.js';
import type { Database } from '../../db/database.js';
import { addPeriod, parsePeriod } from '../../domain/period.js';
import { AppError } from '../../domain/errors.js';
import { renderLicenseKeyEmail } from '../../email/license-key.js';
import { Prisma, type PaymentConnection } from '../../generated/prisma/client.js';
import { lockTenantAudit } from '../audit/audit-log.js';
import { NO_META, systemActor } from '../auth/actor.js';
import type { SecretsContext, ServiceContext } from '../context.js';
import { MAX_SEATS } from '../licenses/attributes.js';
import { renewal, suspension, writeLifecycleChange } from '../licenses/lifecycle.js';
import { findTenantLicense, insertLicense, lockLicenseParents, prepareLicense, writeLicenseUpdate, writeRevocation, type PreparedLicense } from '../licenses/management.js';
import { isUuid } from '../listing.js';
import { planChangeValues, planValuesOf, type PlanValues } from '../plans.js';
import { enqueueEmails } from '../notifications/outbox.js';
import { emitEvent } from '../webhooks/events.js';
import { sealEmailToken, tokenPlaceholder } from '../notifications/sealed-token.js';
import { unstorableStringError } from '../validation.js';
import { normalizeLemonSqueezy, verifyLemonSqueezy } from './lemonsqueezy.js';
import { PROVIDER_NAMES, SignatureError, type PaymentEffect, type PaymentEventIn, type PaymentProvider } from './model.js';
import { normalizePaddle, verifyPaddle } from './paddle.js';
import { normalizeStripe, verifyStripe } from './stripe.js';

// THE service that applies a payment provider's webhook event: verified and normalised by the provider's adapter,
// then applied in one transaction with the row that records it, so each provider event id has its effect exactly
// once (a concurrent duplicate waits on the row's unique key, then finds it and does nothing; a failure rolls both
// back and the provider's retry applies it). Events are merged into the subscription's state (payment_subscriptions)
// by the provider's own times, and the license is brought to what that state says: any delivery order ends the same.
// An event that comes before its purchase (an update, a renewal, a refund) is recorded as pending; the purchase's
// license is created from the state it is merged into, and it is then recorded as applied to that license.
// Each change of a license goes through the functions the console's actions use (activity log, webhook events), as
// the system actor named after the provider and the event id.

type Tx = Prisma.TransactionClient;
type State = Prisma.PaymentSubscriptionGetPayload<object>;
export type PaymentOutcome = 'applied' | 'ignored' | 'pending' | 'failed' | 'duplicate';

export interface PaymentResult {
  /** A delivery that cannot be applied is refused (an AppError), recorded as failed: never answered as applied. */
  outcome: Exclude<PaymentOutcome, 'failed'>;
  eventId: string;
  detail: string | null;
  licenseId: string | null;
}

export const MAX_PAYMENT_BODY_BYTES = 512 * 1024;

async function verify(provider: PaymentProvider, rawBody: string, header: (name: string) => string | undefined, secret: string, now: Date): Promise<unknown> {
  if (provider === 'stripe') return verifyStripe(rawBody, header, secret, now);
  if (provider === 'paddle') return verifyPaddle(rawBody, header, secret);
  return verifyLemonSqueezy(rawBody, header, secret);
}

const normalize = (provider: PaymentProvider, payload: unknown): PaymentEventIn =>
  provider === 'stripe' ? normalizeStripe(payload) : provider === 'paddle' ? normalizePaddle(payload) : normalizeLemonSqueezy(payload);

/**
 * A delivery to /api/v1/payments/{connectionId}/webhook: NotFound for no (enabled) connection, Unauthorized for an
 * unsigned, badly signed or stale one, InvalidRequest for a signed body that is not the provider's event; then
 * applied (or recorded as ignored). A database failure propagates (503: the provider retries).
 */
/** What receiving a payment event needs: the services' context and the server's address (the portal link in the key email). */
export type PaymentContext = SecretsContext & { publicUrl: string };

export async function receivePaymentWebhook(sys: PaymentContext, connectionId: string, rawBody: string, header: (name: string) => string | undefined): Promise<PaymentResult> {
  const connection = isUuid(connectionId) ? await sys.db.prisma.paymentConnection.findUnique({ where: { id: connectionId } }) : null;
  if (!connection || !connection.enabled) throw new AppError('NotFound', 'No payment connection has this id.');
  const provider = connection.provider as PaymentProvider;
  let payload: unknown;
  try {
    payload = await verify(provider, rawBody, header, sys.secrets.decrypt(connection.secretEncrypted), sys.now);
  } catch (error) {
    if (error instanceof SignatureError) throw new AppError('Unauthorized', error.message);
    if (error instanceof SyntaxError) throw new AppError('InvalidRequest', 'The body is not JSON.');
    throw error;
  }
  let event: PaymentEventIn;
  try {
    event = normalize(provider, payload);
  } catch {
    throw new AppError('InvalidRequest', `The body is not a ${PROVIDER_NAMES[provider]} event.`);
  }
  const unstorable = unstorableStringError(event);
  if (unstorable) throw unstorable;
  return applyPaymentEvent(sys, connection, event);
}

type PurchaseContext = ServiceContext & Pick<PaymentContext, 'publicUrl'>;

const Email = z.string().trim().pipe(z.email().max(320));

/** Applies one verified event of a connection, exactly once per its id. */
export async function applyPaymentEvent(sys: PaymentContext, connection: PaymentConnection, event: PaymentEventIn): Promise<PaymentResult> {
  const provider = connection.provider as PaymentProvider;
  const ctx: PurchaseContext = { ...sys, actor: systemActor(connection.tenantId, `${PROVIDER_NAMES[provider]} ${event.id}`.slice(0, 200)), meta: NO_META };
  const effect = event.effect;
  // What creating the license reads is read before the transaction: it holds a connection of the pool while it runs.
  let prepared: PreparedLicense | null = null;
  if (effect.kind === 'purchase' && effect.priceId) {
    const existing = await ctx.db.prisma.paymentSubscription.findUnique({ where: { connectionId_subject: { connectionId: connection.id, subject: effect.subject } }, select: { licenseId: true } });
    if (!existing?.licenseId) {
      try {
        prepared = await preparePurchase(ctx, connection, effect.priceId, effect.quantity, effect.customerEmail);
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        // Not applied and not consumed: recorded as failed, refused so that the provider retries once the vendor has fixed it.
        if (!(await recordFailure(ctx.db, connection, event, error.message, ctx.now))) throw connectionGone();
        throw new AppError('Conflict', `Not applied: ${error.message}`);
      }
    }
  }
  return ctx.db.prisma.$transaction(async (tx) => {
    // Before the activity log's lock, in the mode their foreign keys take anyway: the connection the event's rows
    // reference (a disconnect deletes it, then waits for the log's lock), and the product and plan the license may be
    // written with (as every new license).
    if (!(await lockConnection(tx, connection))) throw connectionGone();
    if (prepared) await lockLicenseParents(tx, [prepared]);
    else await lockPlansOfEvent(tx, connection, effect);
    await lockTenantAudit(tx, connection.tenantId);
    // The row first: a concurrent duplicate waits here until this transaction ends, then finds it and stops.
    const claimed = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO payment_events (id, tenant_id, connection_id, provider_event_id, type, outcome, occurred_at, received_at)
      VALUES (gen_random_uuid(), ${connection.tenantId}::uuid, ${connection.id}::uuid, ${event.id}, ${event.type.slice(0, 200)}, 'applied', ${event.occurredAt}, ${ctx.now})
      ON CONFLICT (connection_id, provider_event_id) DO UPDATE SET outcome = 'applied', detail = NULL, received_at = EXCLUDED.received_at
        WHERE payment_events.outcome = 'failed'
      RETURNING id::text`;
    if (!claimed.length) return { outcome: 'duplicate' as const, eventId: event.id, detail: 'received before: nothing done again', licenseId: null };
    const result = await applyEffect(tx, ctx, connection, event, prepared);
    await tx.paymentEvent.update({
      where: { id: claimed[0].id },
      data: { outcome: result.outcome, detail: result.detail, licenseId: result.licenseId, subject: result.subject, refs: effectRefs(effect), effect: result.keepEffect ? (effect as unknown as Prisma.InputJsonObject) : Prisma.DbNull },
    });
    return { outcome: result.outcome, eventId: event.id, detail: result.detail, licenseId: result.licenseId };
  });
}

/** A pending event's effect as stored (JSON): its times back to Dates. */
function storedEffect(json: Prisma.JsonValue): PaymentEffect {
  const effect = { ...(json as Record<string, unknown>) };
  for (const key of ['periodEnd', 'at', 'endsAt']) if (typeof effect[key] === 'string') effect[key] = new Date(effect[key] as string);
  return effect as unknown as PaymentEffect;
}

const effectRefs = (effect: PaymentEffect) => ('refs' in effect ? effect.refs : []);

const connectionGone = () => new AppError('NotFound', 'No payment connection has this id.');

/** The connection's row, held as the event's rows reference it (FOR KEY SHARE); false when it was disconnected meanwhile. */
async function lockConnection(tx: Tx, connection: PaymentConnection): Promise<boolean> {
  const [live] = await tx.$queryRaw<unknown[]>`SELECT 1 FROM payment_connections WHERE id = ${connection.id}::uuid FOR KEY SHARE`;
  return live !== undefined;
}

/** Records a failed event; false when the connection was disconnected meanwhile (nothing to record it against). */
async function recordFailure(db: Database, connection: PaymentConnection, event: PaymentEventIn, detail: string, now: Date): Promise<boolean> {
  return db.prisma.$transaction(async (tx) => {
    if (!(await lockConnection(tx, connection))) return false;
    await tx.$executeRaw`
      INSERT INTO payment_events (id, tenant_id, connection_id, provider_event_id, type, outcome, detail, occurred_at, received_at)
      VALUES (gen_random_uuid(), ${connection.tenantId}::uuid, ${connection.id}::uuid, ${event.id}, ${event.type.slice(0, 200)}, 'failed', ${detail.slice(0, 500)}, ${event.occurredAt}, ${now})
      ON CONFLICT (connection_id, provider_event_id) DO UPDATE SET detail = EXCLUDED.detail, received_at = EXCLUDED.received_at WHERE payment_events.outcome = 'failed'`;
    return true;
  });
}

/** The plan a price is sold as, and the license a purchase of `quantity` of it gets (its seats: the plan's × quantity). */
async function preparePurchase(ctx: ServiceContext, connection: PaymentConnection, priceId: string, quantity: number, customerEmail: string | null) {
  const mapping = await ctx.db.prisma.paymentPriceMapping.findUnique({ where: { connectionId_priceId: { connectionId: connection.id, priceId } }, include: { plan: true } });
  if (!mapping) throw new AppError('InvalidRequest', `The price ${priceId} is not mapped to a plan: map it on the payment connection, the provider's retry then creates the license.`);
  const email = Email.safeParse(customerEmail ?? '');
  return prepareLicense(ctx, { planId: mapping.planId, maxActivations: mapping.plan.maxActivations * quantity, ...(email.success && { customerEmail: email.data }) });
}

interface Applied {
  outcome: 'applied' | 'ignored' | 'pending';
  detail: string | null;
  licenseId: string | null;
  subject: string | null;
  /** Pending until a payment reference arrives: its effect is kept to be merged then (else it is in the state already). */
  keepEffect?: boolean;
}

const WAITS_FOR_PURCHASE = 'waits for the purchase it refers to (applied when it arrives)';

async function lockState(tx: Tx, connection: PaymentConnection, subject: string | null, refs: string[]): Promise<State | null> {
  if (subject) {
    await tx.$executeRaw`
      INSERT INTO payment_subscriptions (id, tenant_id, connection_id, subject, refs, created_at, updated_at)
      VALUES (gen_random_uuid(), ${connection.tenantId}::uuid, ${connection.id}::uuid, ${subject}, ARRAY[]::text[], now(), now())
      ON CONFLICT (connection_id, subject) DO NOTHING`;
    const [row] = await tx.$queryRaw<{ id: string }[]>`SELECT id::text FROM payment_subscriptions WHERE connection_id = ${connection.id}::uuid AND subject = ${subject} FOR UPDATE`;
    return tx.paymentSubscription.findUniqueOrThrow({ where: { id: row.id } });
  }
  if (!refs.length) return null;
  const [row] = await tx.$queryRaw<{ id: string }[]>`
    SELECT id::text FROM payment_subscriptions WHERE connection_id = ${connection.id}::uuid AND refs && ${refs}::text[] ORDER BY created_at, id LIMIT 1 FOR UPDATE`;
  return row ? tx.paymentSubscription.findUniqueOrThrow({ where: { id: row.id } }) : null;
}

const later = (a: Date | null, b: Date | null) => (a && b ? (a.getTime() >= b.getTime() ? a : b) : (a ?? b));

/** A plan's period (its duration) from a time; null for a perpetual plan. */
const afterPeriod = (duration: string | null | undefined, from: Date) => {
  const period = duration ? parsePeriod(duration) : null;
  return period ? addPeriod(from, period) : null;
};

/** Merges an event into the state: later provider times win, paid periods only grow, a refund stays. */
async function merge(tx: Tx, connection: PaymentConnection, state: State, effect: PaymentEffect, occurredAt: Date | null, now: Date): Promise<State> {
  const next = { ...state, refs: [...new Set([...(state.refs ?? []), ...effectRefs(effect)])] };
  switch (effect.kind) {
    case 'purchase':
      if (!next.priceId && effect.priceId) Object.assign(next, { priceId: effect.priceId, quantity: effect.quantity });
      next.paidUntil = later(next.paidUntil, effect.periodEnd);
      break;
    case 'renewal':
      if (effect.periodEnd) next.paidUntil = later(next.paidUntil, effect.periodEnd);
      else {
        // The provider does not say until when (Lemon Squeezy's invoices): one of the plan's periods from the payment,
        // unless the provider has reported the subscription's period since (its report then already counts this
        // payment). Counted from the payment, not from the paid end, so that a report a moment older than the payment
        // cannot make it add a second period.
        const paidAt = occurredAt ?? now;
        if (!next.paidUntilAt || paidAt.getTime() > next.paidUntilAt.getTime()) {
          const plan = await planOfState(tx, connection, next);
          const estimate = afterPeriod(plan?.duration, paidAt);
          if (estimate) Object.assign(next, { paidUntil: estimate, paidUntilAt: paidAt });
        }
      }
      break;
    case 'subscription':
      if (!next.itemsAt || effect.at.getTime() >= next.itemsAt.getTime()) {
        if (effect.priceId) next.priceId = effect.priceId;
        if (effect.quantity !== null) next.quantity = Math.max(1, effect.quantity);
        next.itemsAt = effect.at;
      }
      if (!next.statusAt || effect.at.getTime() >= next.statusAt.getTime()) Object.assign(next, { canceled: effect.canceled, endsAt: effect.endsAt, statusAt: effect.at });
      // The provider's own period, as of `at`: it replaces an older estimate or report, earlier or later.
      if (effect.periodEnd && (!next.paidUntilAt || effect.at.getTime() >= next.paidUntilAt.getTime())) Object.assign(next, { paidUntil: effect.periodEnd, paidUntilAt: effect.at });
      break;
    case 'refund':
      next.refundedAt ??= occurredAt ?? now;
      break;
    case 'ignored':
      break;
  }
  return next;
}

/**
 * The plans (and their products) the event may move its license to, locked as a new license's are: the plan of the
 * event's price and that of the price the subscription has on record (a renewal carries no price of its own).
 */
async function lockPlansOfEvent(tx: Tx, connection: PaymentConnection, effect: PaymentEffect) {
  if (effect.kind === 'ignored') return;
  // The subscription as lockState finds it (by subject, else by reference), read without its lock.
  const [stored] = effect.subject
    ? await tx.$queryRaw<{ price_id: string | null }[]>`SELECT price_id FROM payment_subscriptions WHERE connection_id = ${connection.id}::uuid AND subject = ${effect.subject}`
    : effect.refs.length
      ? await tx.$queryRaw<{ price_id: string | null }[]>`SELECT price_id FROM payment_subscriptions WHERE connection_id = ${connection.id}::uuid AND refs && ${effect.refs}::text[] ORDER BY created_at, id LIMIT 1`
      : [];
  const priceIds = [...new Set([('priceId' in effect && effect.priceId) || null, stored?.price_id ?? null].filter((id): id is string => id !== null))];
  if (!priceIds.length) return;
  const mappings = await tx.paymentPriceMapping.findMany({ where: { connectionId: connection.id, priceId: { in: priceIds } }, select: { plan: { select: { id: true, productId: true } } } });
  if (mappings.length) await lockLicenseParents(tx, mappings.map(({ plan }) => ({ product: { id: plan.productId }, plan: { id: plan.id } })));
}

async function planOfState(tx: Tx, connection: PaymentConnection, state: Pick<State, 'priceId' | 'licenseId'>) {
  if (state.priceId) {
    const mapping = await tx.paymentPriceMapping.findUnique({ where: { connectionId_priceId: { connectionId: connection.id, priceId: state.priceId } }, include: { plan: true } });
    if (mapping) return mapping.plan;
  }
  const license = state.licenseId ? await tx.license.findUnique({ where: { id: state.licenseId }, select: { plan: true } }) : null;
  return license?.plan ?? null;
}

async function applyEffect(tx: Tx, ctx: PurchaseContext, connection: PaymentConnection, event: PaymentEventIn, prepared: PreparedLicense | null): Promise<Applied> {
  const effect = event.effect;
  if (effect.kind === 'ignored') return { outcome: 'ignored', detail: effect.reason, licenseId: null, subject: null };
  const subject = effect.subject;
  const state = await lockState(tx, connection, subject, effectRefs(effect));
  if (!state) return { outcome: 'pending', detail: WAITS_FOR_PURCHASE, licenseId: null, subject, keepEffect: true };
  let next = await merge(tx, connection, state, effect, event.occurredAt, ctx.now);
  // Events that waited for a payment reference this state now has are applied with it.
  const added = next.refs.filter((ref) => !(state.refs ?? []).includes(ref));
  let waited = false;
  if (added.length) {
    const waiting = await tx.paymentEvent.findMany({ where: { connectionId: connection.id, outcome: 'pending', refs: { hasSome: added }, NOT: { effect: { equals: Prisma.DbNull } } }, orderBy: [{ receivedAt: 'asc' }, { id: 'asc' }] });
    waited = waiting.length > 0;
    for (const pending of waiting) {
      next = await merge(tx, connection, next, storedEffect(pending.effect), pending.occurredAt, ctx.now);
      // Now in the state: pending on its subject like the state's other events until the license is there (below).
      await tx.paymentEvent.update({ where: { id: pending.id }, data: { subject: next.subject, effect: Prisma.DbNull } });
    }
  }
  const notes: string[] = [];
  let licenseId = next.licenseId;
  if (licenseId && !(await tx.license.findUnique({ where: { id: licenseId }, select: { id: true } }))) licenseId = null;
  if (!licenseId && prepared) {
    const created = await createFromPurchase(tx, ctx, connection, event, prepared, next);
    licenseId = created.id;
    Object.assign(next, { licenseExpiresAt: created.expiresAt, planValues: prepared.plan ? planValuesOf(prepared.plan) : null });
    notes.push(created.emailed ? 'license created, key emailed' : 'license created (no customer email in the event: the key was not emailed)');
  }
  next.licenseId = licenseId;
  const { id, createdAt, updatedAt, planValues, ...data } = next;
  void createdAt;
  void updatedAt;
  await tx.paymentSubscription.update({ where: { id }, data: { ...data, planValues: planValues === null ? Prisma.DbNull : (planValues as Prisma.InputJsonValue) } });
  // No license yet (an update or a renewal before its purchase): merged into the state, which the purchase's license is
  // created from; recorded as pending until then.
  if (!licenseId) return { outcome: 'pending', detail: WAITS_FOR_PURCHASE, licenseId: null, subject: next.subject };
  if (!state.licenseId || waited) {
    // The license is there now: the events that waited for it are applied (they are in the state it was made from).
    await tx.paymentEvent.updateMany({
      where: { connectionId: connection.id, outcome: 'pending', subject: next.subject, effect: { equals: Prisma.DbNull } },
      data: { outcome: 'applied', licenseId, detail: `applied with ${event.id}` },
    });
  }
  notes.push(...(await reconcile(tx, ctx, connection, next, licenseId)));
  return { outcome: 'applied', detail: notes.join('; ') || 'nothing to change', licenseId, subject: next.subject };
}

/** The license's expiry as the state says it: the cancellation's end, else the paid end (null: leave it). */
const targetExpiry = (state: State): Date | null => (state.canceled && state.endsAt ? state.endsAt : state.paidUntil);

async function createFromPurchase(tx: Tx, ctx: PurchaseContext, connection: PaymentConnection, event: PaymentEventIn, prepared: PreparedLicense, state: State) {
  const expiry = targetExpiry(state);
  const withExpiry = expiry && prepared.attributes.expiresAt !== null ? { ...prepared, attributes: { ...prepared.attributes, expiresAt: expiry } } : prepared;
  const key = generateLicenseKey(prepared.keyPrefix);
  const provider = PROVIDER_NAMES[connection.provider as PaymentProvider];
  const license = await insertLicense(tx, ctx, withExpiry, key, { paymentProvider: provider, paymentEventId: event.id, subscription: state.subject });
  const to = withExpiry.attributes.customerEmail;
  if (!to) return { id: license.id, expiresAt: license.expiresAt, emailed: false };
  const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: connection.tenantId }, select: { name: true, portalHandle: true } });
  const rendered = await renderLicenseKeyEmail({
    tenantName: tenant.name,
    portalUrl: tenant.portalHandle ? `${ctx.publicUrl}/portal/${tenant.portalHandle}` : null,
    productName: prepared.product.name,
    planName: prepared.plan?.name ?? null,
    to,
    keyText: tokenPlaceholder(key),
    expiresAt: license.expiresAt,
    maxActivations: license.maxActivations,
  });
  const idempotencyKey = `license-key:${license.id}`;
  await enqueueEmails(tx, [{ tenantId: connection.tenantId, kind: 'license-key', idempotencyKey, to, ...rendered, sealedToken: sealEmailToken(ctx.secrets, { idempotencyKey, to }, key) }], ctx.now);
  return { id: license.id, expiresAt: license.expiresAt, emailed: true };
}

/** Brings the license to what the state says, through the services' own writes; returns what it did. */
async function reconcile(tx: Tx, ctx: ServiceContext, connection: PaymentConnection, state: State, licenseId: string): Promise<string[]> {
  const txCtx = { db: { prisma: tx } as unknown as Database };
  let license = await findTenantLicense(txCtx, connection.tenantId, licenseId);
  if (license.status === 'revoked') return ['the license is revoked: nothing changed'];
  const notes: string[] = [];
  // What the state records of the license besides (what it got from its plan, the expiry it was given), when it changes.
  const record: Prisma.PaymentSubscriptionUpdateInput = {};
  // Plan and seats: the plan the price is sold as, its seats times the quantity; never below the seats in use.
  const plan = state.priceId ? await planOfState(tx, connection, { priceId: state.priceId, licenseId: null }) : null;
  const update: Record<string, unknown> = {};
  if (plan) {
    // At most the seats a license may take, whatever quantity the provider sends.
    const wanted = Math.min(plan.maxActivations * (state.quantity ?? 1), MAX_SEATS);
    const seats = Math.max(wanted, license.currentActivations);
    if (seats !== wanted) {
      notes.push(`seats kept at ${seats}: ${license.currentActivations} in use, the subscription pays for ${wanted}`);
      // The vendor is told (the customer keeps working): a webhook event, besides the detail on the Payments page.
      const data = { licenseId, productId: license.productId, seatsPaid: wanted, seatsInUse: license.currentActivations, maxActivations: seats, paymentProvider: PROVIDER_NAMES[connection.provider as PaymentProvider], subscription: state.subject };
      await emitEvent(tx, connection.tenantId, 'license.seats_kept', data, ctx.now);
    }
    if (plan.id !== license.planId) {
      // What the license got from its old plan gives way to the new plan's; what the vendor set on it stays. Compared
      // with what it got then, not with that plan as edited since (the plan's current values only when not recorded).
      const recorded = state.planValues as unknown as PlanValues | null;
      const from = recorded?.planId === license.planId ? recorded : license.planId ? await tx.plan.findFirst({ where: { id: license.planId, tenantId: connection.tenantId }, select: { features: true, customFields: true } }) : null;
      const change = planChangeValues(from, plan, license);
      Object.assign(update, { planId: plan.id, ...change.update });
      record.planValues = change.got as unknown as Prisma.InputJsonObject;
    }
    if (seats !== license.maxActivations) update.maxActivations = seats;
  }
  const expiry = targetExpiry(state);
  // Payments move an expiry they gave, earlier or later (the provider's own period corrects an estimate); one the
  // vendor has set by hand since is only extended by a payment, and ended earlier only by a cancellation not yet
  // applied (once applied, its end is the payments' expiry: a later extension by hand is the vendor's).
  const given = state.licenseExpiresAt !== null && license.expiresAt !== null && state.licenseExpiresAt.getTime() === license.expiresAt.getTime();
  const cancellation = state.canceled && state.endsAt !== null && state.licenseExpiresAt?.getTime() !== state.endsAt.getTime();
  const moves = expiry && license.expiresAt && expiry.getTime() !== license.expiresAt.getTime() && (expiry.getTime() > license.expiresAt.getTime() || given || cancellation);
  const extends_ = moves && expiry.getTime() > license.expiresAt!.getTime() && expiry.getTime() > ctx.now.getTime();
  if (moves && !extends_) update.expiresAt = expiry;
  // The expiry the license has now is the payments' when it is the state's (moved to it, or already there).
  if (expiry && license.expiresAt && (moves || expiry.getTime() === license.expiresAt.getTime()) && expiry.getTime() !== state.licenseExpiresAt?.getTime()) record.licenseExpiresAt = expiry;
  if (Object.keys(update).length) {
    const before = Object.fromEntries(Object.keys(update).map((key) => [key, (license as Record<string, unknown>)[key]]));
    await writeLicenseUpdate(tx, ctx, license, update, { before, after: update });
    notes.push(`updated ${Object.keys(update).join(', ')}`);
    license = await findTenantLicense(txCtx, connection.tenantId, licenseId);
  }
  if (extends_) {
    await writeLifecycleChange(tx, ctx, license, renewal(license, expiry));
    notes.push(`renewed until ${expiry.toISOString()}`);
  }
  if (Object.keys(record).length) await tx.paymentSubscription.update({ where: { id: state.id }, data: record });
  if (state.refundedAt) {
    if (connection.refundAction === 'revoke') {
      if (await writeRevocation(tx, ctx, license)) notes.push('revoked (refund)');
    } else if (license.status !== 'suspended') {
      await writeLifecycleChange(tx, ctx, license, suspension(ctx.now));
      notes.push('suspended (refund)');
    }
  }
  return notes;
}
