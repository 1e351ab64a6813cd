-- ─── The license search's trigram indexes, tenant first ──────────────────────────────────────────────────────────
-- A search by the local part of the customer email or by the key hint read the trigram index of the whole
-- installation: a term common in one company ("customer1": 111,000 licenses of one tenant) cost every other
-- company's search for it a bitmap of those 111,000 rows (80 ms for none of theirs, on the 1M-license database of
-- pnpm bench:scale). With the tenant as the first column of the GIN index (btree_gin: a btree-like operator class
-- for GIN, a trusted extension like pg_trgm, loaded on the embedded PGlite too) the scan intersects the tenant's
-- entries with the term's trigrams: the same search answers in under a millisecond in a company with no match.
--
-- gin_pending_list_limit = 64 (kB, default 4 MB): new entries wait in a pending list that every search reads in
-- full until a vacuum, or the write that fills it, merges it into the index. PostgreSQL may run with autovacuum =
-- off: with 4 MB, a search read up to 500 pages of it after a burst of writes; now at most 8, and a write merges
-- every 64 kB (fastupdate = off, an insertion into the index per write, made bulk inserts 6 times slower; this, 1.7).
--
-- Plain CREATE INDEX (the migration runs as one transaction; CONCURRENTLY cannot): licenses is locked against
-- writes while each index builds, about 15 s each at 1M licenses.
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- DropIndex
DROP INDEX "licenses_customer_email_local_trgm_idx";

-- DropIndex
DROP INDEX "licenses_key_hint_trgm_idx";

-- CreateIndex
CREATE INDEX "licenses_tenant_id_customer_email_local_trgm_idx" ON "licenses" USING GIN ("tenant_id" uuid_ops, "customer_email_local" gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- CreateIndex
CREATE INDEX "licenses_tenant_id_key_hint_trgm_idx" ON "licenses" USING GIN ("tenant_id" uuid_ops, "key_hint" gin_trgm_ops) WITH (gin_pending_list_limit = 64);
