-- CreateTable
CREATE TABLE "bulk_jobs" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "params" JSONB NOT NULL DEFAULT '{}',
    "requested_by" JSONB NOT NULL,
    "total" INTEGER NOT NULL,
    "done" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "leased_until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bulk_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bulk_job_items" (
    "job_id" UUID NOT NULL,
    "license_id" UUID NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "error" TEXT,

    CONSTRAINT "bulk_job_items_pkey" PRIMARY KEY ("job_id","license_id")
);

-- CreateIndex
CREATE INDEX "bulk_jobs_tenant_id_created_at_idx" ON "bulk_jobs"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "bulk_jobs_finished_at_leased_until_idx" ON "bulk_jobs"("finished_at", "leased_until");

-- CreateIndex
CREATE INDEX "bulk_job_items_job_id_status_license_id_idx" ON "bulk_job_items"("job_id", "status", "license_id");

-- AddForeignKey
ALTER TABLE "bulk_jobs" ADD CONSTRAINT "bulk_jobs_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_job_items" ADD CONSTRAINT "bulk_job_items_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "bulk_jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
