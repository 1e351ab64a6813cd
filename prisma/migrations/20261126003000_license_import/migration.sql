-- CreateTable
CREATE TABLE "license_import_rows" (
    "job_id" UUID NOT NULL,
    "line" INTEGER NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "input" JSONB NOT NULL,
    "sealed_key" TEXT,
    "key_generated" BOOLEAN NOT NULL,
    "license_id" UUID,
    "error" TEXT,

    CONSTRAINT "license_import_rows_pkey" PRIMARY KEY ("job_id","line")
);

-- CreateTable
CREATE TABLE "license_import_records" (
    "tenant_id" UUID NOT NULL,
    "file_digest" TEXT NOT NULL,
    "line" INTEGER NOT NULL,
    "license_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "license_import_records_pkey" PRIMARY KEY ("tenant_id","file_digest","line")
);

-- CreateIndex
CREATE INDEX "license_import_rows_job_id_status_line_idx" ON "license_import_rows"("job_id", "status", "line");

-- AddForeignKey
ALTER TABLE "license_import_rows" ADD CONSTRAINT "license_import_rows_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "bulk_jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
