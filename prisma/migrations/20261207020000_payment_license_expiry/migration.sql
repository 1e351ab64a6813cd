-- AlterTable
ALTER TABLE "payment_subscriptions" ADD COLUMN     "license_expires_at" TIMESTAMPTZ(3);

-- A license whose expiry is what its subscription's state says was given it by the payments; any other expiry (set
-- by hand, or not known) stays NULL: payments then only extend it.
UPDATE "payment_subscriptions" s
   SET "license_expires_at" = l."expires_at"
  FROM "licenses" l
 WHERE l."id" = s."license_id" AND l."tenant_id" = s."tenant_id"
   AND l."expires_at" = CASE WHEN s."canceled" AND s."ends_at" IS NOT NULL THEN s."ends_at" ELSE s."paid_until" END;
