-- Trigram indexes for the text searches (license email / key hint, activity entity / user). pg_trgm is a trusted
-- extension (PostgreSQL 13+): the database owner may create it. The embedded PGlite loads it (server/src/db/pglite.ts).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- DropIndex
DROP INDEX "licenses_tenant_id_status_expires_at_idx";

-- CreateTable
CREATE TABLE "license_tallies" (
    "tenant_id" UUID NOT NULL,
    "product_id" UUID NOT NULL,
    "slot" SMALLINT NOT NULL,
    "licenses" INTEGER NOT NULL,
    "revoked" INTEGER NOT NULL,
    "perpetual" INTEGER NOT NULL,

    CONSTRAINT "license_tallies_pkey" PRIMARY KEY ("tenant_id","product_id","slot")
);

-- CreateTable
CREATE TABLE "activation_tallies" (
    "tenant_id" UUID NOT NULL,
    "slot" SMALLINT NOT NULL,
    "active" INTEGER NOT NULL,

    CONSTRAINT "activation_tallies_pkey" PRIMARY KEY ("tenant_id","slot")
);

-- CreateTable
CREATE TABLE "seat_pool_changes" (
    "tenant_id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "slot" SMALLINT NOT NULL,
    "seats_used" INTEGER NOT NULL,
    "seats_available" INTEGER NOT NULL,

    CONSTRAINT "seat_pool_changes_pkey" PRIMARY KEY ("tenant_id","at","slot")
);

-- CreateIndex
CREATE INDEX "audit_log_entity_trgm_idx" ON "audit_log" USING GIN ("entity" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "audit_log_actor_trgm_idx" ON "audit_log" USING GIN ("actor" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "licenses_tenant_id_status_expires_at_product_id_idx" ON "licenses"("tenant_id", "status", "expires_at", "product_id");

-- CreateIndex
CREATE INDEX "licenses_tenant_id_revoked_at_idx" ON "licenses"("tenant_id", "revoked_at");

-- CreateIndex
CREATE INDEX "licenses_customer_email_trgm_idx" ON "licenses" USING GIN ("customer_email" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "licenses_key_hint_trgm_idx" ON "licenses" USING GIN ("key_hint" gin_trgm_ops);

-- ─── license_tallies: licenses per tenant and product (all, revoked, active perpetual) ─────────────────────────
-- Kept exact by triggers in the writer's own transaction. `slot` spreads concurrent writers over 8 rows.
CREATE FUNCTION license_tallies_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO license_tallies AS t (tenant_id, product_id, slot, licenses, revoked, perpetual)
    VALUES (OLD.tenant_id, OLD.product_id, pg_backend_pid() % 8, -1, -(OLD.status = 'revoked')::int, -(OLD.status = 'active' AND OLD.expires_at IS NULL)::int)
    ON CONFLICT (tenant_id, product_id, slot) DO UPDATE
      SET licenses = t.licenses + EXCLUDED.licenses, revoked = t.revoked + EXCLUDED.revoked, perpetual = t.perpetual + EXCLUDED.perpetual;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO license_tallies AS t (tenant_id, product_id, slot, licenses, revoked, perpetual)
    VALUES (NEW.tenant_id, NEW.product_id, pg_backend_pid() % 8, 1, (NEW.status = 'revoked')::int, (NEW.status = 'active' AND NEW.expires_at IS NULL)::int)
    ON CONFLICT (tenant_id, product_id, slot) DO UPDATE
      SET licenses = t.licenses + EXCLUDED.licenses, revoked = t.revoked + EXCLUDED.revoked, perpetual = t.perpetual + EXCLUDED.perpetual;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER license_tallies_insert_delete AFTER INSERT OR DELETE ON licenses FOR EACH ROW EXECUTE FUNCTION license_tallies_count();
CREATE TRIGGER license_tallies_update AFTER UPDATE OF tenant_id, product_id, status, expires_at ON licenses FOR EACH ROW
  WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.product_id IS DISTINCT FROM NEW.product_id OR OLD.status IS DISTINCT FROM NEW.status
        OR (OLD.expires_at IS NULL) IS DISTINCT FROM (NEW.expires_at IS NULL))
  EXECUTE FUNCTION license_tallies_count();

-- ─── activation_tallies: activations holding a seat (deactivated_at null) per tenant ───────────────────────────
CREATE FUNCTION activation_tallies_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.deactivated_at IS NULL THEN
    INSERT INTO activation_tallies AS t (tenant_id, slot, active) VALUES (OLD.tenant_id, pg_backend_pid() % 8, -1)
    ON CONFLICT (tenant_id, slot) DO UPDATE SET active = t.active + EXCLUDED.active;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.deactivated_at IS NULL THEN
    INSERT INTO activation_tallies AS t (tenant_id, slot, active) VALUES (NEW.tenant_id, pg_backend_pid() % 8, 1)
    ON CONFLICT (tenant_id, slot) DO UPDATE SET active = t.active + EXCLUDED.active;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER activation_tallies_insert_delete AFTER INSERT OR DELETE ON activations FOR EACH ROW EXECUTE FUNCTION activation_tallies_count();
CREATE TRIGGER activation_tallies_update AFTER UPDATE OF tenant_id, deactivated_at ON activations FOR EACH ROW
  WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR (OLD.deactivated_at IS NULL) IS DISTINCT FROM (NEW.deactivated_at IS NULL))
  EXECUTE FUNCTION activation_tallies_count();

-- ─── seat_pool_changes: the seat pool's history as signed hourly changes ─────────────────────────────────────────
-- The definition (services/analytics.ts seatPool): at instant p, seats used = activations with s ≤ p < e where
-- s = greatest(activation.created_at, license.created_at), e = least(activation.deactivated_at, license.revoked_at,
-- license.expires_at) (null: still); seats available = Σ max_activations of licenses with created_at ≤ p < least(revoked_at,
-- expires_at). Each such interval is +w at s and −w at e, kept under the first hour boundary ≥ the instant, so the
-- pool at an hour boundary h is Σ of the rows with at ≤ h. Triggers remove a row's old interval and add its new one,
-- so any change (a deactivation, a revocation, a new expiry, a new max_activations) rewrites the history exactly as
-- the definition would compute it.
CREATE FUNCTION seat_pool_hour(t timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN b = t THEN b ELSE b + interval '1 hour' END FROM (SELECT date_bin('1 hour', t, timestamptz '2000-01-01 00:00:00+00') AS b) x
$$;

-- Adds weight (used u, available a) over [s, e); nothing when the interval is empty.
CREATE FUNCTION seat_pool_shift(tenant uuid, s timestamptz, e timestamptz, u integer, a integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF s IS NULL OR (u = 0 AND a = 0) OR e <= s THEN RETURN; END IF;
  INSERT INTO seat_pool_changes AS c (tenant_id, at, slot, seats_used, seats_available)
  SELECT tenant, x.at, pg_backend_pid() % 8, sum(x.u), sum(x.a)
    FROM (VALUES (seat_pool_hour(s), u, a), (seat_pool_hour(e), -u, -a)) AS x(at, u, a) WHERE x.at IS NOT NULL GROUP BY x.at
  ON CONFLICT (tenant_id, at, slot) DO UPDATE SET seats_used = c.seats_used + EXCLUDED.seats_used, seats_available = c.seats_available + EXCLUDED.seats_available;
END $$;

-- The used seats of every activation of one license under the given license bounds, times `sign`.
CREATE FUNCTION seat_pool_license_activations(license uuid, tenant uuid, created timestamptz, ends timestamptz, sign integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO seat_pool_changes AS c (tenant_id, at, slot, seats_used, seats_available)
  SELECT tenant, x.at, pg_backend_pid() % 8, sum(x.u), 0
    FROM (SELECT greatest(a.created_at, created) AS s, least(a.deactivated_at, ends) AS e FROM activations a WHERE a.license_id = license) r
    CROSS JOIN LATERAL (VALUES (seat_pool_hour(r.s), sign), (seat_pool_hour(r.e), -sign)) AS x(at, u)
   WHERE x.at IS NOT NULL AND (r.e IS NULL OR r.e > r.s)
   GROUP BY x.at
  ON CONFLICT (tenant_id, at, slot) DO UPDATE SET seats_used = c.seats_used + EXCLUDED.seats_used;
END $$;

CREATE FUNCTION seat_pool_activation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  l record;
BEGIN
  -- A license deleted with its activations (cascade) is gone by now: its own trigger subtracted them.
  IF TG_OP <> 'INSERT' THEN
    SELECT created_at, revoked_at, expires_at INTO l FROM licenses WHERE id = OLD.license_id;
    IF FOUND THEN PERFORM seat_pool_shift(OLD.tenant_id, greatest(OLD.created_at, l.created_at), least(OLD.deactivated_at, l.revoked_at, l.expires_at), -1, 0); END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    SELECT created_at, revoked_at, expires_at INTO l FROM licenses WHERE id = NEW.license_id;
    IF FOUND THEN PERFORM seat_pool_shift(NEW.tenant_id, greatest(NEW.created_at, l.created_at), least(NEW.deactivated_at, l.revoked_at, l.expires_at), 1, 0); END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER seat_pool_activation_insert_delete AFTER INSERT OR DELETE ON activations FOR EACH ROW EXECUTE FUNCTION seat_pool_activation();
CREATE TRIGGER seat_pool_activation_update AFTER UPDATE OF tenant_id, license_id, created_at, deactivated_at ON activations FOR EACH ROW
  WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.license_id IS DISTINCT FROM NEW.license_id OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.deactivated_at IS DISTINCT FROM NEW.deactivated_at)
  EXECUTE FUNCTION seat_pool_activation();

CREATE FUNCTION seat_pool_license() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- Its activations' seats depend on its bounds (not on max_activations): re-add them only when those change.
  bounds_changed boolean := TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at))
                                                                  IS DISTINCT FROM (NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at)));
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM seat_pool_shift(OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at), 0, -OLD.max_activations);
    IF bounds_changed THEN PERFORM seat_pool_license_activations(OLD.id, OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at), -1); END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM seat_pool_shift(NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at), 0, NEW.max_activations);
    IF bounds_changed THEN PERFORM seat_pool_license_activations(NEW.id, NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at), 1); END IF;
    RETURN NULL;
  END IF;
  RETURN OLD;
END $$;

CREATE TRIGGER seat_pool_license_insert AFTER INSERT ON licenses FOR EACH ROW EXECUTE FUNCTION seat_pool_license();
CREATE TRIGGER seat_pool_license_update AFTER UPDATE OF tenant_id, created_at, revoked_at, expires_at, max_activations ON licenses FOR EACH ROW
  WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.revoked_at IS DISTINCT FROM NEW.revoked_at
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.max_activations IS DISTINCT FROM NEW.max_activations)
  EXECUTE FUNCTION seat_pool_license();
-- Before the delete: its activations are still there to be subtracted.
CREATE TRIGGER seat_pool_license_delete BEFORE DELETE ON licenses FOR EACH ROW EXECUTE FUNCTION seat_pool_license();

-- ─── Backfill (the same statements rebuild the rollups of bench/scale.ts's seed) ─────────────────────────────────
INSERT INTO license_tallies (tenant_id, product_id, slot, licenses, revoked, perpetual)
SELECT tenant_id, product_id, 0, count(*), count(*) FILTER (WHERE status = 'revoked'), count(*) FILTER (WHERE status = 'active' AND expires_at IS NULL)
  FROM licenses GROUP BY 1, 2;

INSERT INTO activation_tallies (tenant_id, slot, active)
SELECT tenant_id, 0, count(*) FROM activations WHERE deactivated_at IS NULL GROUP BY 1;

INSERT INTO seat_pool_changes (tenant_id, at, slot, seats_used, seats_available)
SELECT tenant_id, at, 0, sum(u), sum(a) FROM (
  SELECT r.tenant_id, x.at, x.u, 0 AS a
    FROM (SELECT a.tenant_id, greatest(a.created_at, l.created_at) AS s, least(a.deactivated_at, l.revoked_at, l.expires_at) AS e
            FROM activations a JOIN licenses l ON l.id = a.license_id) r
    CROSS JOIN LATERAL (VALUES (seat_pool_hour(r.s), 1), (seat_pool_hour(r.e), -1)) AS x(at, u)
   WHERE x.at IS NOT NULL AND (r.e IS NULL OR r.e > r.s)
  UNION ALL
  SELECT r.tenant_id, x.at, 0, x.a
    FROM (SELECT tenant_id, created_at AS s, least(revoked_at, expires_at) AS e, max_activations AS w FROM licenses) r
    CROSS JOIN LATERAL (VALUES (seat_pool_hour(r.s), r.w), (seat_pool_hour(r.e), -r.w)) AS x(at, a)
   WHERE x.at IS NOT NULL AND (r.e IS NULL OR r.e > r.s)
) changes GROUP BY 1, 2;
