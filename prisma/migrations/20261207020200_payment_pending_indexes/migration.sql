-- DropIndex
DROP INDEX "payment_events_connection_id_outcome_idx";

-- CreateIndex
CREATE INDEX "payment_events_pending_subject_idx" ON "payment_events"("connection_id", "subject") WHERE (outcome = 'pending');

-- CreateIndex
CREATE INDEX "payment_events_pending_refs_idx" ON "payment_events" USING GIN ("refs") WHERE (outcome = 'pending');
