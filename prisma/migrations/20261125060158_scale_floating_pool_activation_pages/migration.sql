-- CreateIndex
CREATE INDEX "activations_license_id_created_at_idx" ON "activations"("license_id", "created_at");

-- CreateIndex
CREATE INDEX "floating_sessions_tenant_id_lease_expires_at_created_at_end_idx" ON "floating_sessions"("tenant_id", "lease_expires_at", "created_at", "ended_at");

-- CreateIndex
CREATE INDEX "licenses_tenant_id_floating_seats_created_at_expires_at_rev_idx" ON "licenses"("tenant_id", "floating_seats", "created_at", "expires_at", "revoked_at", "status");
