-- ─── The license caches' change log is not WAL-logged (docs/architecture.md "License cache") ─────────────────────
-- The log is only ever read by the servers polling this primary, and each of them forgets everything whenever it
-- cannot prove it read every change (services/licenses/license-change-feed.ts): after a restart, a failover, a lost
-- connection. Writing it to the WAL only made every activation's commit carry about a fifth more WAL, which a
-- synchronous standby must also receive and replay. Unlogged, its rows cost no WAL; PostgreSQL empties it after a
-- crash (and a promoted standby starts with it empty), and the feed notices because the epoch row below, unlogged
-- too, vanishes with it: a reader that finds another epoch, or none, starts over (the poll writes a new one).
ALTER TABLE "license_cache_changes" SET UNLOGGED;

CREATE UNLOGGED TABLE "license_cache_changes_epoch" (
    "id" BOOLEAN NOT NULL DEFAULT true,
    "epoch" UUID NOT NULL DEFAULT gen_random_uuid(),

    CONSTRAINT "license_cache_changes_epoch_pkey" PRIMARY KEY ("id")
);
INSERT INTO "license_cache_changes_epoch" ("id") VALUES (true);
