-- CreateTable
CREATE TABLE "job_runs" (
    "job" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "leased_until" TIMESTAMPTZ(3) NOT NULL,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "passes" INTEGER NOT NULL DEFAULT 1,

    CONSTRAINT "job_runs_pkey" PRIMARY KEY ("job","period")
);

-- CreateTable
CREATE TABLE "job_run_tenants" (
    "job" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "job_run_tenants_pkey" PRIMARY KEY ("job","period","tenant_id")
);

-- CreateIndex
CREATE INDEX "job_runs_finished_at_next_attempt_at_idx" ON "job_runs"("finished_at", "next_attempt_at");

-- CreateIndex
CREATE INDEX "job_run_tenants_tenant_id_idx" ON "job_run_tenants"("tenant_id");

-- AddForeignKey
ALTER TABLE "job_run_tenants" ADD CONSTRAINT "job_run_tenants_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
