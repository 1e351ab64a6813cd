-- AlterTable
ALTER TABLE "payment_subscriptions" ADD COLUMN     "paid_until_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "payment_events_connection_id_outcome_idx" ON "payment_events"("connection_id", "outcome");
