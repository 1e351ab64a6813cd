-- The nightly verification's verdicts become append-only records (audit_verdicts, HMAC-sealed by the server):
-- the former per-tenant row (audit_verifications) could be overwritten by the app role.
DROP TABLE "audit_verifications";

-- CreateTable
CREATE TABLE "audit_verdicts" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "verified_at" TIMESTAMPTZ(3) NOT NULL,
    "valid" BOOLEAN NOT NULL,
    "head_seq" INTEGER NOT NULL,
    "head_hash" TEXT NOT NULL,
    "broken_at_seq" INTEGER,
    "problem" TEXT,
    "checkpoint_seq" INTEGER,
    "checkpoint_hash" TEXT,
    "external_checkpoints" INTEGER NOT NULL DEFAULT 0,
    "mac" TEXT NOT NULL,

    CONSTRAINT "audit_verdicts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "audit_verdicts_tenant_id_verified_at_idx" ON "audit_verdicts"("tenant_id", "verified_at");

-- Checkpoints and verdicts are append-only like the log itself: the app role gets SELECT/INSERT only
-- (server/src/db/roles.ts), and these triggers refuse UPDATE, DELETE and TRUNCATE to the owner too.
CREATE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_checkpoints_no_update_delete BEFORE UPDATE OR DELETE ON "audit_checkpoints"
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON "audit_checkpoints"
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_verdicts_no_update_delete BEFORE UPDATE OR DELETE ON "audit_verdicts"
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_verdicts_no_truncate BEFORE TRUNCATE ON "audit_verdicts"
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
