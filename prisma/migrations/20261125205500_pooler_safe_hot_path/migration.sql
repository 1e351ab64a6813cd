-- The public hot path's license lookup, as a function (README "Performance" › "Connection pooling"). PL/pgSQL keeps
-- its statements' plans per server session, which is what a named prepared statement gave the hot path before; unlike
-- one, it works through a transaction-mode pooler (PgBouncer), whose clients share server sessions.
-- lock_row: take the license's row lock first (seat changes of one license queue on it), then read the row as the
-- lock left it (VOLATILE: each statement sees what committed before it).
CREATE FUNCTION license_by_digest(p_digest text, lock_row boolean DEFAULT false)
RETURNS TABLE (
  "id" uuid, "tenantId" uuid, "status" text, "maxActivations" integer, "currentActivations" integer,
  "expiresAt" timestamptz, "isTrial" boolean, "nodeLocked" boolean, "offlineGraceDays" integer,
  "gracePeriodDays" integer, "features" text[], "customFields" jsonb, "minVersion" text, "maxVersion" text,
  "maintenanceExpiresAt" timestamptz, "customerEmail" text, "productId" uuid, "productName" text,
  "bundleProducts" text[], "subscriptionEndsAt" timestamptz
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  IF lock_row THEN
    PERFORM 1 FROM licenses l WHERE l.key_digest = p_digest FOR UPDATE;
  END IF;
  RETURN QUERY
  SELECT l.id, l.tenant_id, l.status::text, l.max_activations, l.current_activations, l.expires_at, l.is_trial,
         l.node_locked, l.offline_grace_days, l.grace_period_days, l.features, l.custom_fields, l.min_version,
         l.max_version, l.maintenance_expires_at, l.customer_email, p.id, p.name,
         CASE WHEN p.is_bundle THEN ARRAY(
           SELECT m.name FROM bundle_items b JOIN products m ON m.id = b.product_id
            WHERE b.bundle_id = p.id ORDER BY m.name) END,
         t.subscription_ends_at
    FROM licenses l
    JOIN products p ON p.id = l.product_id
    JOIN tenants t ON t.id = l.tenant_id
   WHERE l.key_digest = p_digest;
END $$;
