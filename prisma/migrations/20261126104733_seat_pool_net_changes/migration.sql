-- ─── seat_pool_changes: a license change writes only the hours whose sums change ───────────────────────────────
-- The trigger of scale_rollups_search removed a license's old contribution (its seats available, and its
-- activations' seats used when its bounds changed) and added the new one in separate upserts: a new expiry rewrote
-- the rows of its creation hour and of each activation's start hour with −n then +n. Those row versions stay in the
-- table until vacuum, and every seat-pool read of the tenant reads its history through them (issue 23: ~12,000
-- renewals left 115k index entries for 35k live rows). Now the old and the new contribution are summed per hour in
-- one statement and only the hours whose sums change are written. The same definition (see scale_rollups_search).
CREATE OR REPLACE FUNCTION seat_pool_license() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- Its activations' seats depend on its bounds (not on max_activations): re-counted only when those change.
  bounds_changed boolean := TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at))
                                                                  IS DISTINCT FROM (NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at)));
BEGIN
  -- (OLD is null on INSERT and NEW on DELETE: their side is left out.)
  WITH sides (sign, id, tenant, s, e, w) AS (
    SELECT -1, OLD.id, OLD.tenant_id, OLD.created_at, least(OLD.revoked_at, OLD.expires_at), OLD.max_activations WHERE TG_OP <> 'INSERT'
    UNION ALL
    SELECT 1, NEW.id, NEW.tenant_id, NEW.created_at, least(NEW.revoked_at, NEW.expires_at), NEW.max_activations WHERE TG_OP <> 'DELETE'
  ), changes (tenant, at, u, a) AS (
    SELECT v.tenant, x.at, 0, x.a
      FROM sides v CROSS JOIN LATERAL (VALUES (seat_pool_hour(v.s), v.sign * v.w), (seat_pool_hour(v.e), -v.sign * v.w)) AS x(at, a)
     WHERE v.s IS NOT NULL AND (v.e IS NULL OR v.e > v.s) AND x.at IS NOT NULL
    UNION ALL
    SELECT v.tenant, x.at, x.u, 0
      FROM sides v JOIN activations a ON a.license_id = v.id AND bounds_changed
     CROSS JOIN LATERAL (SELECT greatest(a.created_at, v.s) AS s, least(a.deactivated_at, v.e) AS e) r
     CROSS JOIN LATERAL (VALUES (seat_pool_hour(r.s), v.sign), (seat_pool_hour(r.e), -v.sign)) AS x(at, u)
     WHERE x.at IS NOT NULL AND (r.e IS NULL OR r.e > r.s)
  )
  INSERT INTO seat_pool_changes AS c (tenant_id, at, slot, seats_used, seats_available)
  SELECT tenant, at, pg_backend_pid() % 8, sum(u), sum(a) FROM changes GROUP BY tenant, at HAVING sum(u) <> 0 OR sum(a) <> 0
  ON CONFLICT (tenant_id, at, slot) DO UPDATE SET seats_used = c.seats_used + EXCLUDED.seats_used, seats_available = c.seats_available + EXCLUDED.seats_available;
  -- Before a delete (its activations are still there to be subtracted): go on with it.
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NULL;
END $$;
