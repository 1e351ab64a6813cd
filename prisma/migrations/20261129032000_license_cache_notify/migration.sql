-- ─── Invalidation of the servers' license caches (docs/architecture.md "License cache") ──────────────────────────
-- Each server process may keep what validate reads (license_by_digest: the license row, its product, the product's
-- bundle members, the tenant's subscription end) in memory. Every change to one of those rows sends, on the channel
-- license_cache, from the changing transaction itself (delivered at its commit, dropped with its rollback), what
-- to forget: so every write path, present or future, whatever statement or service makes it, invalidates.
-- Payload: comma-separated tokens, `l<license id>` (forget that license) or `t<tenant id>` (forget every license of
-- the tenant), or `*` (forget everything). A statement that changes many rows sends one notification, at most
-- 150 tokens long (NOTIFY's limit is 8000 bytes), falling back to tenants, then to `*`.

CREATE FUNCTION license_cache_notify(ids uuid[], tenants uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(cardinality(ids), 0) = 0 AND coalesce(cardinality(tenants), 0) = 0 THEN
    RETURN;
  ELSIF coalesce(cardinality(ids), 0) BETWEEN 1 AND 150 THEN
    PERFORM pg_notify('license_cache', (SELECT string_agg('l' || i::text, ',') FROM unnest(ids) i));
  ELSIF coalesce(cardinality(tenants), 0) BETWEEN 1 AND 150 THEN
    PERFORM pg_notify('license_cache', (SELECT string_agg('t' || i::text, ',') FROM unnest(tenants) i));
  ELSE
    PERFORM pg_notify('license_cache', '*');
  END IF;
END $$;

-- Licenses: a changed row (any column: whatever validate reads now or later), a deleted one. A new license needs
-- nothing: a cache keeps only licenses it found, and a new key digest was never found before. (Each branch's
-- statement is planned when it first runs: the DELETE trigger never reads new_licenses.)
-- The rows are compared whole (`o IS DISTINCT FROM n`): every column type of licenses needs an equality operator
-- (jsonb, not json).
CREATE FUNCTION license_cache_licenses_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[];
  tenants uuid[];
BEGIN
  IF TG_OP = 'UPDATE' THEN
    SELECT array_agg(o.id), array_agg(DISTINCT o.tenant_id) INTO ids, tenants
      FROM old_licenses o JOIN new_licenses n USING (id) WHERE o IS DISTINCT FROM n;
  ELSE
    SELECT array_agg(o.id), array_agg(DISTINCT o.tenant_id) INTO ids, tenants FROM old_licenses o;
  END IF;
  PERFORM license_cache_notify(ids, tenants);
  RETURN NULL;
END $$;
CREATE TRIGGER license_cache_licenses_update AFTER UPDATE ON licenses
  REFERENCING OLD TABLE AS old_licenses NEW TABLE AS new_licenses FOR EACH STATEMENT EXECUTE FUNCTION license_cache_licenses_changed();
CREATE TRIGGER license_cache_licenses_delete AFTER DELETE ON licenses
  REFERENCING OLD TABLE AS old_licenses FOR EACH STATEMENT EXECUTE FUNCTION license_cache_licenses_changed();

CREATE FUNCTION license_cache_forget_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('license_cache', '*');
  RETURN NULL;
END $$;
CREATE TRIGGER license_cache_licenses_truncate AFTER TRUNCATE ON licenses FOR EACH STATEMENT EXECUTE FUNCTION license_cache_forget_all();
CREATE TRIGGER license_cache_products_truncate AFTER TRUNCATE ON products FOR EACH STATEMENT EXECUTE FUNCTION license_cache_forget_all();
CREATE TRIGGER license_cache_bundle_items_truncate AFTER TRUNCATE ON bundle_items FOR EACH STATEMENT EXECUTE FUNCTION license_cache_forget_all();
CREATE TRIGGER license_cache_tenants_truncate AFTER TRUNCATE ON tenants FOR EACH STATEMENT EXECUTE FUNCTION license_cache_forget_all();

-- Products: a license's answer carries its product's name and, for a bundle, its members' names; a rename or a
-- bundle change forgets the tenant's licenses (rare, and a member's rename reaches every bundle holding it).
CREATE FUNCTION license_cache_products_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    PERFORM license_cache_notify(NULL, (SELECT array_agg(DISTINCT o.tenant_id) FROM old_products o JOIN new_products n USING (id)
                                         WHERE o.name IS DISTINCT FROM n.name OR o.is_bundle IS DISTINCT FROM n.is_bundle OR o.tenant_id IS DISTINCT FROM n.tenant_id));
  ELSE
    PERFORM license_cache_notify(NULL, (SELECT array_agg(DISTINCT o.tenant_id) FROM old_products o));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER license_cache_products_update AFTER UPDATE ON products
  REFERENCING OLD TABLE AS old_products NEW TABLE AS new_products FOR EACH STATEMENT EXECUTE FUNCTION license_cache_products_changed();
CREATE TRIGGER license_cache_products_delete AFTER DELETE ON products
  REFERENCING OLD TABLE AS old_products FOR EACH STATEMENT EXECUTE FUNCTION license_cache_products_changed();

-- Bundle members: added, removed or moved; the bundle's tenant (its members are of the same tenant).
CREATE FUNCTION license_cache_bundle_items_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is null on INSERT, NEW on DELETE.
  PERFORM license_cache_notify(NULL, (SELECT array_agg(DISTINCT p.tenant_id) FROM products p WHERE p.id IN (NEW.bundle_id, OLD.bundle_id)));
  RETURN NULL;
END $$;
CREATE TRIGGER license_cache_bundle_items_change AFTER INSERT OR UPDATE OR DELETE ON bundle_items
  FOR EACH ROW EXECUTE FUNCTION license_cache_bundle_items_changed();

-- Tenants: the vendor's subscription end (vendorWarning). Deleting a tenant deletes its licenses (notified above).
CREATE FUNCTION license_cache_tenants_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM license_cache_notify(NULL, ARRAY[NEW.id]);
  RETURN NULL;
END $$;
CREATE TRIGGER license_cache_tenants_update AFTER UPDATE OF subscription_ends_at ON tenants
  FOR EACH ROW WHEN (OLD.subscription_ends_at IS DISTINCT FROM NEW.subscription_ends_at) EXECUTE FUNCTION license_cache_tenants_changed();
