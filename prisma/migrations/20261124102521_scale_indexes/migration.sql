-- CreateIndex
CREATE INDEX "activations_tenant_id_deactivated_at_idx" ON "activations"("tenant_id", "deactivated_at");

-- CreateIndex
CREATE INDEX "audit_log_tenant_id_entity_type_entity_id_seq_idx" ON "audit_log"("tenant_id", "entity_type", "entity_id", "seq");

-- CreateIndex
CREATE INDEX "audit_log_tenant_id_actor_id_seq_idx" ON "audit_log"("tenant_id", "actor_id", "seq");

-- CreateIndex
CREATE INDEX "licenses_tenant_id_product_id_created_at_idx" ON "licenses"("tenant_id", "product_id", "created_at");
