-- AlterTable
ALTER TABLE "payment_subscriptions" ADD COLUMN     "plan_values" JSONB;

-- What a license sold before got from its plan is not known: its plan's values as they are now.
UPDATE "payment_subscriptions" s
   SET "plan_values" = jsonb_build_object('planId', p."id", 'features', to_jsonb(p."features"), 'customFields', COALESCE(p."custom_fields", '{}'::jsonb))
  FROM "licenses" l
  JOIN "plans" p ON p."id" = l."plan_id" AND p."tenant_id" = l."tenant_id"
 WHERE l."id" = s."license_id" AND l."tenant_id" = s."tenant_id";
