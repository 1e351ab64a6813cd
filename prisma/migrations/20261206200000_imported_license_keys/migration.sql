-- AlterTable
ALTER TABLE "products" ADD COLUMN     "allow_imported_keys" BOOLEAN NOT NULL DEFAULT false;
