-- What the license cache's row trigger adds to a one-row license update, on the database alone
-- (docs/performance.md "The cost of invalidation"). Run against a scratch database migrated as shipped:
--   createdb kf_trigger_cost && DATABASE_URL=postgres:///kf_trigger_cost pnpm db:migrate \
--     && psql -q -d kf_trigger_cost -f bench/license-cache-trigger-cost.sql && dropdb kf_trigger_cost
-- A table shaped like licenses' hot columns (the real one needs a company and a product per row) carries the shipped
-- trigger function, license_cache_license_updated (migration license_cache_row_trigger: its insert into the unlogged
-- change log), and an empty trigger for the cost of firing one at all; each variant updates 200 rows 20,000 times (one
-- transaction each), three times, in alternating order. The table and what the script logged are removed at the end.
CREATE TABLE trigger_cost_licenses (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), current_activations int NOT NULL DEFAULT 0,
                                    updated_at timestamptz, padding text DEFAULT repeat('x', 300));
INSERT INTO trigger_cost_licenses (current_activations) SELECT 0 FROM generate_series(1, 200);
CREATE FUNCTION trigger_cost_nothing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER shipped AFTER UPDATE ON trigger_cost_licenses FOR EACH ROW EXECUTE FUNCTION license_cache_license_updated();
CREATE TRIGGER empty AFTER UPDATE ON trigger_cost_licenses FOR EACH ROW EXECUTE FUNCTION trigger_cost_nothing();

-- µs per update with `trigger` enabled (or none): each update its own transaction, as an activation's is (commits
-- not waiting for the disk, so that the flush does not drown the difference).
CREATE PROCEDURE trigger_cost_run(trigger text, round int) LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[] := ARRAY(SELECT id FROM trigger_cost_licenses);
  started timestamptz;
BEGIN
  ALTER TABLE trigger_cost_licenses DISABLE TRIGGER USER;
  IF trigger IS NOT NULL THEN EXECUTE format('ALTER TABLE trigger_cost_licenses ENABLE TRIGGER %I', trigger); END IF;
  COMMIT;
  started := clock_timestamp();
  FOR i IN 1..20000 LOOP
    UPDATE trigger_cost_licenses SET current_activations = current_activations + 1, updated_at = now() WHERE id = ids[1 + i % 200];
    COMMIT;
  END LOOP;
  RAISE NOTICE 'round %: % trigger: % µs per update', round, coalesce(trigger, 'no'), round((extract(epoch FROM clock_timestamp() - started) * 1e6 / 20000)::numeric, 1);
END $$;

SET synchronous_commit = off;
SET client_min_messages = notice;
CALL trigger_cost_run(NULL, 1); VACUUM trigger_cost_licenses; CALL trigger_cost_run('empty', 1); VACUUM trigger_cost_licenses; CALL trigger_cost_run('shipped', 1); VACUUM trigger_cost_licenses;
CALL trigger_cost_run('shipped', 2); VACUUM trigger_cost_licenses; CALL trigger_cost_run('empty', 2); VACUUM trigger_cost_licenses; CALL trigger_cost_run(NULL, 2); VACUUM trigger_cost_licenses;
CALL trigger_cost_run(NULL, 3); VACUUM trigger_cost_licenses; CALL trigger_cost_run('empty', 3); VACUUM trigger_cost_licenses; CALL trigger_cost_run('shipped', 3);

DELETE FROM license_cache_changes WHERE payload LIKE 'l%' AND substr(payload, 2)::uuid IN (SELECT id FROM trigger_cost_licenses);
DROP TABLE trigger_cost_licenses;
DROP PROCEDURE trigger_cost_run(text, int);
DROP FUNCTION trigger_cost_nothing();
