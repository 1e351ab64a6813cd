-- An event that names no subscription (a Lemon Squeezy renewal, a Stripe refund) finds its subscription by a
-- reference (`refs && …`, services/payments/apply.ts): without this index that read every subscription of the
-- connection on every such event.
-- CreateIndex
CREATE INDEX "payment_subscriptions_refs_idx" ON "payment_subscriptions" USING GIN ("refs");
