-- AlterTable
ALTER TABLE "licenses" ADD COLUMN     "plan_id" UUID;

-- CreateTable
CREATE TABLE "plans" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "product_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "duration" TEXT,
    "max_activations" INTEGER NOT NULL,
    "is_trial" BOOLEAN NOT NULL DEFAULT false,
    "node_locked" BOOLEAN NOT NULL DEFAULT false,
    "offline_grace_days" INTEGER,
    "grace_period_days" INTEGER,
    "features" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "custom_fields" JSONB,
    "min_version" TEXT,
    "max_version" TEXT,
    "maintenance_period" TEXT,
    "floating_seats" INTEGER,
    "quotas" JSONB NOT NULL DEFAULT '[]',
    "archived_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "plans_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "plans_tenant_id_product_id_idx" ON "plans"("tenant_id", "product_id");

-- CreateIndex
CREATE UNIQUE INDEX "plans_product_id_name_key" ON "plans"("product_id", "name");

-- CreateIndex
CREATE INDEX "licenses_tenant_id_plan_id_created_at_idx" ON "licenses"("tenant_id", "plan_id", "created_at");

-- AddForeignKey
ALTER TABLE "plans" ADD CONSTRAINT "plans_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "plans" ADD CONSTRAINT "plans_product_id_fkey" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "licenses" ADD CONSTRAINT "licenses_plan_id_fkey" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE NO ACTION ON UPDATE CASCADE;
