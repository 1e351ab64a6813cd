-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "parent_key_id" UUID;

-- CreateTable
CREATE TABLE "login_failures" (
    "email" TEXT NOT NULL,
    "failed_count" INTEGER NOT NULL DEFAULT 0,
    "first_failed_at" TIMESTAMPTZ(3),
    "locked_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "login_failures_pkey" PRIMARY KEY ("email")
);

-- CreateTable
CREATE TABLE "audit_chain_legacy" (
    "tenant_id" UUID NOT NULL,
    "last_legacy_seq" INTEGER NOT NULL,

    CONSTRAINT "audit_chain_legacy_pkey" PRIMARY KEY ("tenant_id")
);

-- CreateTable
CREATE TABLE "audit_checkpoints" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "kid" TEXT NOT NULL,
    "signature" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "audit_checkpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_verifications" (
    "tenant_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "verified_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "audit_verifications_pkey" PRIMARY KEY ("tenant_id")
);

-- CreateIndex
CREATE INDEX "login_failures_updated_at_idx" ON "login_failures"("updated_at");

-- CreateIndex
CREATE INDEX "audit_checkpoints_tenant_id_seq_idx" ON "audit_checkpoints"("tenant_id", "seq");

-- CreateIndex
CREATE INDEX "api_keys_parent_key_id_idx" ON "api_keys"("parent_key_id");

-- CreateIndex
CREATE INDEX "api_keys_created_by_id_idx" ON "api_keys"("created_by_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_parent_key_id_fkey" FOREIGN KEY ("parent_key_id") REFERENCES "api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Every API key must trace to a human: keys without one (created with another key before parent_key_id
-- existed) are revoked; their owners create new ones.
UPDATE "api_keys" SET "revoked_at" = CURRENT_TIMESTAMP WHERE "created_by_id" IS NULL AND "revoked_at" IS NULL;

-- The audit chain becomes keyed (HMAC-SHA256) from here on: rows written so far keep their SHA-256 links.
INSERT INTO "audit_chain_legacy" ("tenant_id", "last_legacy_seq")
  SELECT "tenant_id", max("seq") FROM "audit_log" GROUP BY "tenant_id";
