-- AlterEnum
ALTER TYPE "license_status" ADD VALUE IF NOT EXISTS 'suspended';

-- AlterTable
ALTER TABLE "license_tallies" ADD COLUMN     "suspended" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "licenses" ADD COLUMN     "suspended_at" TIMESTAMPTZ(3);

-- ─── license_tallies also count suspended licenses ─────────────────────────────────────────────────────────────
-- A suspended license is neither revoked nor (active) perpetual; without its own column the analytics would take
-- it for an expired one (expired = all − revoked − perpetual − expiring later). The literal 'suspended' is only
-- evaluated when the trigger runs (PostgreSQL refuses a new enum value in the transaction that adds it); no
-- license is suspended yet, so the new column's 0 is exact and needs no backfill.
CREATE OR REPLACE FUNCTION license_tallies_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO license_tallies AS t (tenant_id, product_id, slot, licenses, revoked, perpetual, suspended)
    VALUES (OLD.tenant_id, OLD.product_id, pg_backend_pid() % 8, -1, -(OLD.status = 'revoked')::int, -(OLD.status = 'active' AND OLD.expires_at IS NULL)::int,
            -(OLD.status::text = 'suspended')::int)
    ON CONFLICT (tenant_id, product_id, slot) DO UPDATE
      SET licenses = t.licenses + EXCLUDED.licenses, revoked = t.revoked + EXCLUDED.revoked, perpetual = t.perpetual + EXCLUDED.perpetual,
          suspended = t.suspended + EXCLUDED.suspended;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO license_tallies AS t (tenant_id, product_id, slot, licenses, revoked, perpetual, suspended)
    VALUES (NEW.tenant_id, NEW.product_id, pg_backend_pid() % 8, 1, (NEW.status = 'revoked')::int, (NEW.status = 'active' AND NEW.expires_at IS NULL)::int,
            (NEW.status::text = 'suspended')::int)
    ON CONFLICT (tenant_id, product_id, slot) DO UPDATE
      SET licenses = t.licenses + EXCLUDED.licenses, revoked = t.revoked + EXCLUDED.revoked, perpetual = t.perpetual + EXCLUDED.perpetual,
          suspended = t.suspended + EXCLUDED.suspended;
  END IF;
  RETURN NULL;
END $$;
