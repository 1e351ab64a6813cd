-- CreateTable
CREATE TABLE "floating_seat_changes" (
    "tenant_id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "slot" SMALLINT NOT NULL,
    "started" INTEGER NOT NULL,
    "ended" INTEGER NOT NULL,

    CONSTRAINT "floating_seat_changes_pkey" PRIMARY KEY ("tenant_id","at","slot")
);

-- ─── floating_seat_changes: the floating pool's size as signed hourly changes ────────────────────────────────────
-- The definition (services/floating/management.ts floatingPoolConsumption): a floating license counts in a bucket
-- [s, e) when its validity [created_at, end) meets it, end = least(revoked_at if revoked ('-infinity' without a
-- date), expires_at) — created_at < e AND end > s; an empty validity (end ≤ created_at) counts nowhere. Kept as
-- +seats under `started` at the hour boundary at or before created_at and under `ended` at the first one at or after
-- the end, so for buckets on hour boundaries the pool is Σ started (at < e) − Σ ended (at ≤ s). The pool size used to
-- be read from an index-only range of the tenant's floating licenses: after ordinary writes, a heap fetch for each
-- one on a page vacuum had not marked all-visible yet (issue 23). Kept exact by triggers in the writer's own
-- transaction like the other rollups; `slot` spreads concurrent writers over 8 rows.
CREATE FUNCTION floating_seat_shift(tenant uuid, created timestamptz, ends timestamptz, seats integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF seats IS NULL OR created IS NULL OR ends <= created THEN RETURN; END IF;
  INSERT INTO floating_seat_changes AS c (tenant_id, at, slot, started, ended)
  SELECT tenant, x.at, pg_backend_pid() % 8, sum(x.started), sum(x.ended)
    FROM (VALUES (date_bin('1 hour', created, timestamptz '2000-01-01 00:00:00+00'), seats, 0), (seat_pool_hour(ends), 0, seats)) AS x(at, started, ended)
   WHERE x.at IS NOT NULL GROUP BY x.at
  ON CONFLICT (tenant_id, at, slot) DO UPDATE SET started = c.started + EXCLUDED.started, ended = c.ended + EXCLUDED.ended;
END $$;

CREATE FUNCTION floating_seat_license() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM floating_seat_shift(OLD.tenant_id, OLD.created_at,
      least(CASE WHEN OLD.status = 'revoked' THEN coalesce(OLD.revoked_at, '-infinity') END, OLD.expires_at), -OLD.floating_seats);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM floating_seat_shift(NEW.tenant_id, NEW.created_at,
      least(CASE WHEN NEW.status = 'revoked' THEN coalesce(NEW.revoked_at, '-infinity') END, NEW.expires_at), NEW.floating_seats);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER floating_seat_license_insert AFTER INSERT ON licenses FOR EACH ROW WHEN (NEW.floating_seats IS NOT NULL) EXECUTE FUNCTION floating_seat_license();
CREATE TRIGGER floating_seat_license_delete AFTER DELETE ON licenses FOR EACH ROW WHEN (OLD.floating_seats IS NOT NULL) EXECUTE FUNCTION floating_seat_license();
CREATE TRIGGER floating_seat_license_update AFTER UPDATE OF tenant_id, created_at, status, revoked_at, expires_at, floating_seats ON licenses FOR EACH ROW
  WHEN ((OLD.floating_seats IS NOT NULL OR NEW.floating_seats IS NOT NULL)
        AND (OLD.tenant_id, OLD.created_at, OLD.status = 'revoked', OLD.revoked_at, OLD.expires_at, OLD.floating_seats)
            IS DISTINCT FROM (NEW.tenant_id, NEW.created_at, NEW.status = 'revoked', NEW.revoked_at, NEW.expires_at, NEW.floating_seats))
  EXECUTE FUNCTION floating_seat_license();

-- ─── Backfill (the same statement rebuilds the rollup of bench/scale.ts's seed) ────────────────────────────────────
INSERT INTO floating_seat_changes (tenant_id, at, slot, started, ended)
SELECT tenant_id, at, 0, sum(started), sum(ended) FROM (
  SELECT r.tenant_id, x.at, x.started, x.ended
    FROM (SELECT tenant_id, created_at AS s, least(CASE WHEN status = 'revoked' THEN coalesce(revoked_at, '-infinity') END, expires_at) AS e, floating_seats AS w
            FROM licenses WHERE floating_seats IS NOT NULL) r
    CROSS JOIN LATERAL (VALUES (date_bin('1 hour', r.s, timestamptz '2000-01-01 00:00:00+00'), r.w, 0), (seat_pool_hour(r.e), 0, r.w)) AS x(at, started, ended)
   WHERE x.at IS NOT NULL AND (r.e IS NULL OR r.e > r.s)
) changes GROUP BY 1, 2;
