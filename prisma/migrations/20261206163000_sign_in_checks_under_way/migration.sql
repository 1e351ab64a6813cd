-- AlterTable
ALTER TABLE "login_failures" ADD COLUMN     "pending_count" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "pending_until" TIMESTAMPTZ(3);
