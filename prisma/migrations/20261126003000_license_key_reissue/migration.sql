-- A license's former key, accepted until valid_until after a reissue with an overlap (README "Licenses" › reissue).
-- CreateTable
CREATE TABLE "retired_license_keys" (
    "key_digest" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "license_id" UUID NOT NULL,
    "key_hint" TEXT NOT NULL,
    "valid_until" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "retired_license_keys_pkey" PRIMARY KEY ("key_digest")
);

-- CreateIndex
CREATE INDEX "retired_license_keys_license_id_idx" ON "retired_license_keys"("license_id");

-- CreateIndex
CREATE INDEX "retired_license_keys_valid_until_idx" ON "retired_license_keys"("valid_until");

-- AddForeignKey
ALTER TABLE "retired_license_keys" ADD CONSTRAINT "retired_license_keys_license_id_fkey" FOREIGN KEY ("license_id") REFERENCES "licenses"("id") ON DELETE CASCADE ON UPDATE CASCADE;
