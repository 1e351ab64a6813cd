-- AlterTable
ALTER TABLE "tenants" ADD COLUMN     "renewal_url" TEXT,
ADD COLUMN     "support_email" TEXT;
