/*
  Warnings:

  - A unique constraint covering the columns `[portal_handle]` on the table `tenants` will be added. If there are existing duplicate values, this will fail.

*/
-- AlterTable
ALTER TABLE "products" ADD COLUMN     "device_free_limit" INTEGER,
ADD COLUMN     "device_free_window_days" INTEGER NOT NULL DEFAULT 30,
ADD COLUMN     "renewal_url" TEXT;

-- AlterTable
ALTER TABLE "tenants" ADD COLUMN     "portal_accent_color" TEXT,
ADD COLUMN     "portal_handle" TEXT,
ADD COLUMN     "portal_logo_url" TEXT;

-- CreateTable
CREATE TABLE "portal_sign_in_links" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "token_digest" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "portal_sign_in_links_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "portal_sessions" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "token_digest" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "portal_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "portal_device_frees" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "product_id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "activation_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "portal_device_frees_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "portal_sign_in_links_token_digest_key" ON "portal_sign_in_links"("token_digest");

-- CreateIndex
CREATE INDEX "portal_sign_in_links_tenant_id_email_idx" ON "portal_sign_in_links"("tenant_id", "email");

-- CreateIndex
CREATE INDEX "portal_sign_in_links_expires_at_idx" ON "portal_sign_in_links"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "portal_sessions_token_digest_key" ON "portal_sessions"("token_digest");

-- CreateIndex
CREATE INDEX "portal_sessions_tenant_id_email_idx" ON "portal_sessions"("tenant_id", "email");

-- CreateIndex
CREATE INDEX "portal_sessions_expires_at_idx" ON "portal_sessions"("expires_at");

-- CreateIndex
CREATE INDEX "portal_device_frees_tenant_id_email_product_id_created_at_idx" ON "portal_device_frees"("tenant_id", "email", "product_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "tenants_portal_handle_key" ON "tenants"("portal_handle");

-- AddForeignKey
ALTER TABLE "portal_sign_in_links" ADD CONSTRAINT "portal_sign_in_links_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "portal_sessions" ADD CONSTRAINT "portal_sessions_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "portal_device_frees" ADD CONSTRAINT "portal_device_frees_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

