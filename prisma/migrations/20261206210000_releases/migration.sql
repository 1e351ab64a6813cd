-- CreateEnum
CREATE TYPE "release_channel" AS ENUM ('stable', 'rc', 'beta', 'alpha', 'dev');

-- CreateEnum
CREATE TYPE "release_status" AS ENUM ('draft', 'published', 'yanked');

-- CreateTable
CREATE TABLE "releases" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "product_id" UUID NOT NULL,
    "version" TEXT NOT NULL,
    "channel" "release_channel" NOT NULL DEFAULT 'stable',
    "status" "release_status" NOT NULL DEFAULT 'draft',
    "notes" TEXT,
    "required_features" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "requires_maintenance" BOOLEAN NOT NULL DEFAULT false,
    "published_at" TIMESTAMPTZ(3),
    "yanked_at" TIMESTAMPTZ(3),
    "download_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "releases_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "release_artifacts" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "release_id" UUID NOT NULL,
    "filename" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "arch" TEXT NOT NULL,
    "filetype" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "sha512" TEXT NOT NULL,
    "storage_key" TEXT NOT NULL,
    "signature" TEXT NOT NULL,
    "download_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "release_artifacts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "releases_tenant_id_product_id_status_idx" ON "releases"("tenant_id", "product_id", "status");

-- CreateIndex
CREATE UNIQUE INDEX "releases_product_id_version_key" ON "releases"("product_id", "version");

-- CreateIndex
CREATE UNIQUE INDEX "release_artifacts_storage_key_key" ON "release_artifacts"("storage_key");

-- CreateIndex
CREATE INDEX "release_artifacts_tenant_id_idx" ON "release_artifacts"("tenant_id");

-- CreateIndex
CREATE UNIQUE INDEX "release_artifacts_release_id_filename_key" ON "release_artifacts"("release_id", "filename");

-- AddForeignKey
ALTER TABLE "releases" ADD CONSTRAINT "releases_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "releases" ADD CONSTRAINT "releases_product_id_fkey" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "release_artifacts" ADD CONSTRAINT "release_artifacts_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "release_artifacts" ADD CONSTRAINT "release_artifacts_release_id_fkey" FOREIGN KEY ("release_id") REFERENCES "releases"("id") ON DELETE CASCADE ON UPDATE CASCADE;
