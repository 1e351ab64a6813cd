-- AlterTable
ALTER TABLE "activations" ADD COLUMN     "platform" TEXT;

-- CreateTable
CREATE TABLE "keygen_import_mappings" (
    "tenant_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "keygen_id" TEXT NOT NULL,
    "keyforge_id" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "keygen_import_mappings_pkey" PRIMARY KEY ("tenant_id","kind","keygen_id")
);
