-- ─── The license caches' change log (docs/architecture.md "License cache") ────────────────────────────────────────
-- The triggers of migration license_cache_notify announced each change with NOTIFY, and PostgreSQL serialises the
-- commits of every notifying transaction of the cluster (one lock held through the commit's WAL flush and, with
-- synchronous replication, through the standby's acknowledgement). They now append a row to this log instead: an
-- insert like any other, committed or rolled back with the change, taking no lock beyond the row's own.
--
-- Each row carries the top-level transaction id of the writer (`xid`: pg_current_xact_id(), the 64-bit id that never
-- wraps around, as a bigint so that the schema stays plain for Prisma). A reader remembers the
-- snapshot of its previous poll (pg_current_snapshot(): xmin, xmax, the transactions in progress) and asks for the
-- rows whose transaction was not visible in it — `xid >= xmax OR xid = ANY(in progress)` — reading them in its new
-- snapshot, so it gets exactly the changes committed between the two snapshots, whatever order their transactions
-- took their ids and committed in (a transaction that wrote its row first and committed last is in the first
-- snapshot's in-progress list). Both branches are index scans on `xid`.
-- Payload: comma-separated tokens, `l<license id>` (forget that license), `t<tenant id>` (forget every license of
-- the tenant) or `*` (forget everything); one row per statement, at most 150 tokens, falling back to tenants, then `*`.
CREATE TABLE "license_cache_changes" (
    "id" BIGSERIAL NOT NULL,
    "xid" BIGINT NOT NULL DEFAULT ((pg_current_xact_id())::text)::bigint,
    "payload" TEXT NOT NULL,

    CONSTRAINT "license_cache_changes_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "license_cache_changes_xid_idx" ON "license_cache_changes"("xid");

-- The readers prune the log (rows below a horizon: the xmin of a snapshot old enough that every live reader has read
-- past it) and move this row's `below` up in the same statement; a reader whose previous snapshot's xmin is below it
-- may have lost rows, and starts over with an empty cache. One row (readers use max(below) all the same).
-- The housekeeping job prunes too, so the log stays bounded when no server reads it (LICENSE_CACHE=off): each run
-- moves `below` up to the `candidate` the previous run recorded (the xmin of its snapshot) and records a new one.
CREATE TABLE "license_cache_changes_horizon" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "below" BIGINT NOT NULL DEFAULT 0,
    "candidate" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "license_cache_changes_horizon_pkey" PRIMARY KEY ("id")
);
INSERT INTO "license_cache_changes_horizon" ("id") VALUES (true);

-- The embedded database (PGlite) has one process and one session: its cache listens in process, and that session sets
-- keyforge.license_cache_notify = on (db/database.ts), which makes the triggers NOTIFY instead of logging. No
-- PostgreSQL session sets it: there, NOTIFY would bring the commit lock back, and nothing listens.
CREATE FUNCTION license_cache_record(payload text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('keyforge.license_cache_notify', true) = 'on' THEN
    PERFORM pg_notify('license_cache', payload);
  ELSE
    INSERT INTO license_cache_changes (payload) VALUES (payload);
  END IF;
END $$;

CREATE OR REPLACE FUNCTION license_cache_notify(ids uuid[], tenants uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(cardinality(ids), 0) = 0 AND coalesce(cardinality(tenants), 0) = 0 THEN
    RETURN;
  ELSIF coalesce(cardinality(ids), 0) BETWEEN 1 AND 150 THEN
    PERFORM license_cache_record((SELECT string_agg('l' || i::text, ',') FROM unnest(ids) i));
  ELSIF coalesce(cardinality(tenants), 0) BETWEEN 1 AND 150 THEN
    PERFORM license_cache_record((SELECT string_agg('t' || i::text, ',') FROM unnest(tenants) i));
  ELSE
    PERFORM license_cache_record('*');
  END IF;
END $$;

CREATE OR REPLACE FUNCTION license_cache_forget_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM license_cache_record('*');
  RETURN NULL;
END $$;
