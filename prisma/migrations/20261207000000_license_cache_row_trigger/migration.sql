-- ─── License updates logged row by row (docs/architecture.md "License cache") ─────────────────────────────────────
-- The statement-level trigger on licenses (migration license_cache_notify) captured the statement's old and new rows
-- in transition tables, compared them whole and built one payload through two more PL/pgSQL calls. On a one-row
-- update, as every activation and deactivation makes (its seat count), that cost a third of the update itself; a
-- row-level trigger with one insert costs about a tenth (`BENCH_SCENARIOS=writes pnpm bench`, docs/performance.md).
-- So each updated license now logs its own row, `l<license id>`:
-- - A statement that changes many licenses logs one row per license; a reader that finds more than 1,000 rows in one
--   poll forgets everything instead (services/licenses/license-change-feed.ts).
-- - An update that leaves every column as it was is logged too: forgetting a license that did not change costs its
--   next validate one read, and comparing whole rows on every update cost more than that.
-- Deletes and truncations keep their statement-level triggers (rare, and a bulk delete names companies).
DROP TRIGGER license_cache_licenses_update ON licenses;

CREATE FUNCTION license_cache_license_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- The embedded database's session NOTIFYs instead (migration license_cache_change_log).
  IF current_setting('keyforge.license_cache_notify', true) = 'on' THEN
    PERFORM pg_notify('license_cache', 'l' || OLD.id::text);
  ELSE
    INSERT INTO license_cache_changes (payload) VALUES ('l' || OLD.id::text);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER license_cache_licenses_update AFTER UPDATE ON licenses
  FOR EACH ROW EXECUTE FUNCTION license_cache_license_updated();

-- The statement-level function now serves deletes only.
CREATE OR REPLACE FUNCTION license_cache_licenses_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[];
  tenants uuid[];
BEGIN
  SELECT array_agg(o.id), array_agg(DISTINCT o.tenant_id) INTO ids, tenants FROM old_licenses o;
  PERFORM license_cache_notify(ids, tenants);
  RETURN NULL;
END $$;
