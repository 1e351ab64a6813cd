-- ─── The customer email split at its last '@', for the license search (services/licenses/management.ts) ──────────
-- A search for a domain ("example42.test") through one trigram index on the whole email read the posting lists of
-- trigrams every email has (`exa`, `tes`, `est`…) across all tenants, then rechecked every match in the table:
-- 200–400 ms on the 1M-license database (issue 23). Split, a term without '@' is in the email exactly when it is in
-- the local part or in the domain: the local part has its own trigram index (the domain's common trigrams are not
-- in it), the domains matching the term come from the small `license_email_domains` tally (one row per tenant,
-- domain and slot), and their licenses from a btree in list order. The old trigram index on the whole email goes.
ALTER TABLE "licenses"
  ADD COLUMN "customer_email_local" TEXT GENERATED ALWAYS AS (regexp_replace("customer_email", '@[^@]*$', '')) STORED,
  ADD COLUMN "customer_email_domain" TEXT GENERATED ALWAYS AS (lower(substring("customer_email" from '@([^@]*)$'))) STORED;

-- DropIndex
DROP INDEX "licenses_customer_email_trgm_idx";

-- CreateIndex
CREATE INDEX "licenses_customer_email_local_trgm_idx" ON "licenses" USING GIN ("customer_email_local" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "licenses_tenant_id_customer_email_domain_created_at_id_idx" ON "licenses"("tenant_id", "customer_email_domain", "created_at" DESC, "id" DESC);

-- CreateTable
CREATE TABLE "license_email_domains" (
    "tenant_id" UUID NOT NULL,
    "domain" TEXT NOT NULL,
    "slot" SMALLINT NOT NULL,
    "licenses" INTEGER NOT NULL,

    CONSTRAINT "license_email_domains_pkey" PRIMARY KEY ("tenant_id","domain","slot")
);

-- ─── license_email_domains: licenses per tenant and customer-email domain ────────────────────────────────────────
-- Kept exact by triggers in the writer's own transaction, like license_tallies; `slot` spreads concurrent writers.
CREATE FUNCTION license_email_domains_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.customer_email_domain IS NOT NULL THEN
    INSERT INTO license_email_domains AS d (tenant_id, domain, slot, licenses) VALUES (OLD.tenant_id, OLD.customer_email_domain, pg_backend_pid() % 8, -1)
    ON CONFLICT (tenant_id, domain, slot) DO UPDATE SET licenses = d.licenses + EXCLUDED.licenses;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.customer_email_domain IS NOT NULL THEN
    INSERT INTO license_email_domains AS d (tenant_id, domain, slot, licenses) VALUES (NEW.tenant_id, NEW.customer_email_domain, pg_backend_pid() % 8, 1)
    ON CONFLICT (tenant_id, domain, slot) DO UPDATE SET licenses = d.licenses + EXCLUDED.licenses;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER license_email_domains_insert_delete AFTER INSERT OR DELETE ON licenses FOR EACH ROW EXECUTE FUNCTION license_email_domains_count();
-- A generated column cannot be named in UPDATE OF: customer_email (its source) is.
CREATE TRIGGER license_email_domains_update AFTER UPDATE OF tenant_id, customer_email ON licenses FOR EACH ROW
  WHEN ((OLD.tenant_id, OLD.customer_email_domain) IS DISTINCT FROM (NEW.tenant_id, NEW.customer_email_domain))
  EXECUTE FUNCTION license_email_domains_count();

-- ─── Backfill (the same statement rebuilds the rollup of bench/scale.ts's seed) ────────────────────────────────────
INSERT INTO license_email_domains (tenant_id, domain, slot, licenses)
SELECT tenant_id, customer_email_domain, 0, count(*) FROM licenses WHERE customer_email_domain IS NOT NULL GROUP BY 1, 2;
