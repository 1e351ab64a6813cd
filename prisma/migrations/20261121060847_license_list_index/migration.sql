-- CreateIndex
CREATE INDEX "licenses_tenant_id_created_at_idx" ON "licenses"("tenant_id", "created_at");
