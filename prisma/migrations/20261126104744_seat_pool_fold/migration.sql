-- CreateTable
CREATE TABLE "seat_pool_fold" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "before" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "seat_pool_fold_pkey" PRIMARY KEY ("id")
);

-- ─── seat_pool_changes: history older than the analytics reach folded into one row per tenant and slot ───────────
-- A seat-pool read sums every change up to each bucket end: for a tenant with years of licenses that was every
-- hour of its history (35k rows for the 500k-license tenant, 4,000 table pages, and each one's dead versions after
-- writes until vacuum). The analytics reach back 30 days (services/analytics.ts analyticsWindow), so the changes of
-- hours before `seat_pool_fold.before` (set by the housekeeping job to 35 days ago, see foldSeatPoolHistory) are kept
-- summed under at = '-infinity' instead: the sum up to any later instant is the same, and a read touches 30-odd
-- days of rows. The triggers write a change of an hour before it there directly (a renewal of a license created
-- years ago, a revocation of one that expired long ago); recent hours, the only ones an activation writes, never
-- look the boundary up. A change landing below the boundary while it moves (a writer that read the old one) is
-- counted all the same: folding only merges rows, the sums never depend on it.
-- One row, id true (no CHECK constraint: Prisma's schema engine cannot describe one on this table).
INSERT INTO "seat_pool_fold" ("id", "before") VALUES (true, '-infinity');

-- The row a change at instant t is kept under: its hour (seat_pool_hour), or '-infinity' for a folded hour.
CREATE FUNCTION seat_pool_at(t timestamptz) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN t IS NULL THEN NULL
              WHEN seat_pool_hour(t) >= now() - interval '35 days' THEN seat_pool_hour(t)
              WHEN seat_pool_hour(t) < (SELECT "before" FROM seat_pool_fold WHERE id) THEN '-infinity'::timestamptz
              ELSE seat_pool_hour(t) END
$$;

CREATE OR REPLACE FUNCTION seat_pool_shift(tenant uuid, s timestamptz, e timestamptz, u integer, a integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF s IS NULL OR (u = 0 AND a = 0) OR e <= s THEN RETURN; END IF;
  INSERT INTO seat_pool_changes AS c (tenant_id, at, slot, seats_used, seats_available)
  SELECT tenant, x.at, pg_backend_pid() % 8, sum(x.u), sum(x.a)
    FROM (VALUES (seat_pool_at(s), u, a), (seat_pool_at(e), -u, -a)) AS x(at, u, a) WHERE x.at IS NOT NULL GROUP BY x.at
  ON CONFLICT (tenant_id, at, slot) DO UPDATE SET seats_used = c.seats_used + EXCLUDED.seats_used, seats_available = c.seats_available + EXCLUDED.seats_available;
END $$;

-- As in seat_pool_net_changes, with seat_pool_at.
CREATE OR REPLACE FUNCTION seat_pool_license() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bounds_changed boolean := TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at))
                                                                  IS DISTINCT FROM (NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at)));
BEGIN
  WITH sides (sign, id, tenant, s, e, w) AS (
    SELECT -1, OLD.id, OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at), OLD.max_activations WHERE TG_OP <> 'INSERT'
    UNION ALL
    SELECT 1, NEW.id, NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at), NEW.max_activations WHERE TG_OP <> 'DELETE'
  ), changes (tenant, at, u, a) AS (
    SELECT v.tenant, x.at, 0, x.a
      FROM sides v CROSS JOIN LATERAL (VALUES (seat_pool_at(v.s), v.sign * v.w), (seat_pool_at(v.e), -v.sign * v.w)) AS x(at, a)
     WHERE v.s IS NOT NULL AND (v.e IS NULL OR v.e > v.s) AND x.at IS NOT NULL
    UNION ALL
    SELECT v.tenant, x.at, x.u, 0
      FROM sides v JOIN activations a ON a.license_id = v.id AND bounds_changed
     CROSS JOIN LATERAL (SELECT greatest(a.created_at, v.s) AS s, least(a.deactivated_at, v.e) AS e) r
     CROSS JOIN LATERAL (VALUES (seat_pool_at(r.s), v.sign), (seat_pool_at(r.e), -v.sign)) AS x(at, u)
     WHERE x.at IS NOT NULL AND (r.e IS NULL OR r.e > r.s)
  )
  INSERT INTO seat_pool_changes AS c (tenant_id, at, slot, seats_used, seats_available)
  SELECT tenant, at, pg_backend_pid() % 8, sum(u), sum(a) FROM changes GROUP BY tenant, at HAVING sum(u) <> 0 OR sum(a) <> 0
  ON CONFLICT (tenant_id, at, slot) DO UPDATE SET seats_used = c.seats_used + EXCLUDED.seats_used, seats_available = c.seats_available + EXCLUDED.seats_available;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NULL;
END $$;

-- Unused since seat_pool_net_changes (the license trigger counts its activations itself).
DROP FUNCTION seat_pool_license_activations(uuid, uuid, timestamptz, timestamptz, integer);
