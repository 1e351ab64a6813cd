-- CreateTable
CREATE TABLE "payment_connections" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "secret_encrypted" TEXT NOT NULL,
    "secret_hint" TEXT NOT NULL,
    "refund_action" TEXT NOT NULL DEFAULT 'suspend',
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "payment_connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "payment_price_mappings" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "connection_id" UUID NOT NULL,
    "price_id" TEXT NOT NULL,
    "plan_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "payment_price_mappings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "payment_events" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "connection_id" UUID NOT NULL,
    "provider_event_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "detail" TEXT,
    "subject" TEXT,
    "refs" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "license_id" UUID,
    "effect" JSONB,
    "occurred_at" TIMESTAMPTZ(3),
    "received_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "payment_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "payment_subscriptions" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "connection_id" UUID NOT NULL,
    "subject" TEXT NOT NULL,
    "license_id" UUID,
    "refs" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "price_id" TEXT,
    "quantity" INTEGER,
    "items_at" TIMESTAMPTZ(3),
    "paid_until" TIMESTAMPTZ(3),
    "canceled" BOOLEAN NOT NULL DEFAULT false,
    "ends_at" TIMESTAMPTZ(3),
    "status_at" TIMESTAMPTZ(3),
    "refunded_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "payment_subscriptions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "payment_connections_tenant_id_created_at_idx" ON "payment_connections"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "payment_price_mappings_plan_id_idx" ON "payment_price_mappings"("plan_id");

-- CreateIndex
CREATE UNIQUE INDEX "payment_price_mappings_connection_id_price_id_key" ON "payment_price_mappings"("connection_id", "price_id");

-- CreateIndex
CREATE INDEX "payment_events_connection_id_received_at_idx" ON "payment_events"("connection_id", "received_at");

-- CreateIndex
CREATE INDEX "payment_events_tenant_id_received_at_idx" ON "payment_events"("tenant_id", "received_at");

-- CreateIndex
CREATE UNIQUE INDEX "payment_events_connection_id_provider_event_id_key" ON "payment_events"("connection_id", "provider_event_id");

-- CreateIndex
CREATE INDEX "payment_subscriptions_license_id_idx" ON "payment_subscriptions"("license_id");

-- CreateIndex
CREATE UNIQUE INDEX "payment_subscriptions_connection_id_subject_key" ON "payment_subscriptions"("connection_id", "subject");

-- AddForeignKey
ALTER TABLE "payment_connections" ADD CONSTRAINT "payment_connections_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "payment_price_mappings" ADD CONSTRAINT "payment_price_mappings_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "payment_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "payment_price_mappings" ADD CONSTRAINT "payment_price_mappings_plan_id_fkey" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "payment_events" ADD CONSTRAINT "payment_events_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "payment_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "payment_subscriptions" ADD CONSTRAINT "payment_subscriptions_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "payment_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;
