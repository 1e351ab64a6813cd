-- CreateTable
CREATE TABLE "activation_days" (
    "tenant_id" UUID NOT NULL,
    "product_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "slot" SMALLINT NOT NULL,
    "activations" INTEGER NOT NULL,

    CONSTRAINT "activation_days_pkey" PRIMARY KEY ("tenant_id","day","product_id","slot")
);

-- Kept exact by triggers in the writer's own transaction: +1 when an activation is inserted, −1 when one is
-- deleted. created_at and license_id of an activation never change, nor does a license's product_id.
CREATE FUNCTION activation_days_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  row_ activations;
  delta integer;
BEGIN
  IF TG_OP = 'INSERT' THEN row_ := NEW; delta := 1; ELSE row_ := OLD; delta := -1; END IF;
  INSERT INTO activation_days (tenant_id, product_id, day, slot, activations)
  SELECT row_.tenant_id, l.product_id, (row_.created_at AT TIME ZONE 'UTC')::date, pg_backend_pid() % 8, delta
    FROM licenses l WHERE l.id = row_.license_id
  ON CONFLICT (tenant_id, day, product_id, slot) DO UPDATE SET activations = activation_days.activations + EXCLUDED.activations;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER activation_days_insert AFTER INSERT ON activations FOR EACH ROW EXECUTE FUNCTION activation_days_count();
CREATE TRIGGER activation_days_delete BEFORE DELETE ON activations FOR EACH ROW EXECUTE FUNCTION activation_days_count();

-- A license deleted with its activations (cascade): its product is unreadable from the activations' trigger
-- by then (that trigger then finds no license and does nothing), so the license's own trigger subtracts them.
CREATE FUNCTION activation_days_license_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activation_days (tenant_id, product_id, day, slot, activations)
  SELECT OLD.tenant_id, OLD.product_id, (a.created_at AT TIME ZONE 'UTC')::date, pg_backend_pid() % 8, -count(*)
    FROM activations a WHERE a.license_id = OLD.id GROUP BY 3
  ON CONFLICT (tenant_id, day, product_id, slot) DO UPDATE SET activations = activation_days.activations + EXCLUDED.activations;
  RETURN OLD;
END $$;

CREATE TRIGGER activation_days_license_delete BEFORE DELETE ON licenses FOR EACH ROW EXECUTE FUNCTION activation_days_license_deleted();

-- Backfill the existing activations.
INSERT INTO activation_days (tenant_id, product_id, day, slot, activations)
SELECT a.tenant_id, l.product_id, (a.created_at AT TIME ZONE 'UTC')::date, 0, count(*)
  FROM activations a JOIN licenses l ON l.id = a.license_id
 GROUP BY 1, 2, 3;
