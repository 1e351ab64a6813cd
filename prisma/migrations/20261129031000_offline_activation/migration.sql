-- AlterTable
ALTER TABLE "activations" ADD COLUMN     "device_public_key" TEXT;

-- AlterTable
ALTER TABLE "products" ADD COLUMN     "license_file_ttl_days" INTEGER NOT NULL DEFAULT 30;

-- CreateTable
CREATE TABLE "offline_activation_requests" (
    "challenge_digest" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "license_id" UUID NOT NULL,
    "activation_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "offline_activation_requests_pkey" PRIMARY KEY ("challenge_digest")
);

-- CreateIndex
CREATE INDEX "offline_activation_requests_license_id_idx" ON "offline_activation_requests"("license_id");

-- CreateIndex
CREATE INDEX "offline_activation_requests_tenant_id_idx" ON "offline_activation_requests"("tenant_id");

-- AddForeignKey
ALTER TABLE "offline_activation_requests" ADD CONSTRAINT "offline_activation_requests_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "offline_activation_requests" ADD CONSTRAINT "offline_activation_requests_license_id_fkey" FOREIGN KEY ("license_id") REFERENCES "licenses"("id") ON DELETE CASCADE ON UPDATE CASCADE;
