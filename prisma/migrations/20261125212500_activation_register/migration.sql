-- The activation as one statement (README "Performance"): the license row is locked for one short statement
-- sequence inside the database, not for round trips through an interactive transaction. The service
-- (services/licenses/activations.ts) decides entitlement in TypeScript on the row it read, and passes what it saw;
-- this function only applies the seat change when the license is still that way.

-- A nonce is spent once, before it expires (services/licenses/nonces.ts). True when this call spent it.
CREATE FUNCTION nonce_consume(p_digest text, p_now timestamptz) RETURNS boolean LANGUAGE sql AS $$
  WITH spent AS (
    UPDATE nonces SET consumed_at = p_now
     WHERE digest = p_digest AND consumed_at IS NULL AND expires_at > p_now
    RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM spent)
$$;

-- The enabled endpoints of a tenant subscribed to a type (an empty filter: every type except tests).
CREATE FUNCTION webhook_subscribers(p_tenant uuid, p_type text) RETURNS SETOF uuid LANGUAGE sql STABLE AS $$
  SELECT e.id FROM webhook_endpoints e
   WHERE e.tenant_id = p_tenant AND e.enabled
     AND (p_type = ANY(e.event_types) OR (cardinality(e.event_types) = 0 AND p_type <> 'webhook.test'))
$$;

-- One event and its deliveries (services/webhooks/events.ts, emitEvent); nothing when no endpoint subscribes (an
-- index probe: most tenants have none), nor when an event with the same dedupe key exists.
CREATE FUNCTION webhook_emit(p_tenant uuid, p_type text, p_id uuid, p_body text, p_dedupe_key text, p_now timestamptz)
RETURNS void LANGUAGE sql AS $$
  WITH targets AS (SELECT s.id FROM webhook_subscribers(p_tenant, p_type) AS s(id)),
  event AS (
    INSERT INTO webhook_events (id, tenant_id, type, body, dedupe_key, created_at)
    SELECT p_id, p_tenant, p_type, p_body, p_dedupe_key, p_now WHERE EXISTS (SELECT 1 FROM targets)
    ON CONFLICT (dedupe_key) DO NOTHING RETURNING id)
  INSERT INTO webhook_deliveries (id, tenant_id, event_id, endpoint_id, next_attempt_at, created_at)
  SELECT gen_random_uuid(), p_tenant, event.id, targets.id, p_now, p_now FROM event CROSS JOIN targets
  ON CONFLICT (event_id, endpoint_id) DO NOTHING
$$;

-- Outcomes: 'changed' (status or expiry differ from what the service checked: nothing done, it reads again),
-- 'nonce_invalid' (nothing done), 'seats_exhausted' (the nonce is spent), 'reused' (this device's active activation
-- refreshed), 'activated' (a seat taken, the activation and its webhook event written). seats_used and
-- max_activations are the license's after the call.
CREATE FUNCTION activation_register(
  p_license_id uuid, p_seen_status text, p_seen_expires_at timestamptz, p_nonce_digest text, p_now timestamptz,
  p_activation_id uuid, p_device_id text, p_device_name text, p_version text, p_user_email text, p_ip text,
  p_event_id uuid, p_event_body text
) RETURNS TABLE (outcome text, seats_used integer, max_activations integer) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  l licenses%ROWTYPE;
  existing uuid;
BEGIN
  SELECT * INTO l FROM licenses WHERE id = p_license_id FOR UPDATE;
  IF NOT FOUND OR l.status::text <> p_seen_status OR l.expires_at IS DISTINCT FROM p_seen_expires_at THEN
    RETURN QUERY SELECT 'changed', l.current_activations, l.max_activations;
    RETURN;
  END IF;
  IF NOT nonce_consume(p_nonce_digest, p_now) THEN
    RETURN QUERY SELECT 'nonce_invalid', l.current_activations, l.max_activations;
    RETURN;
  END IF;
  IF p_device_id IS NOT NULL THEN
    SELECT a.id INTO existing FROM activations a
     WHERE a.license_id = l.id AND a.device_id = p_device_id AND a.deactivated_at IS NULL LIMIT 1;
  END IF;
  IF existing IS NOT NULL THEN
    UPDATE activations SET device_name = coalesce(p_device_name, device_name), version = coalesce(p_version, version),
           user_email = coalesce(p_user_email, user_email), ip = coalesce(p_ip, ip), last_seen_at = p_now
     WHERE id = existing;
    outcome := 'reused';
  ELSIF l.current_activations >= l.max_activations THEN
    RETURN QUERY SELECT 'seats_exhausted', l.current_activations, l.max_activations;
    RETURN;
  ELSE
    l.current_activations := l.current_activations + 1;
    UPDATE licenses SET current_activations = l.current_activations, updated_at = p_now WHERE id = l.id;
    INSERT INTO activations (id, tenant_id, license_id, device_id, device_name, version, user_email, ip, created_at, last_seen_at)
    VALUES (p_activation_id, l.tenant_id, l.id, p_device_id, p_device_name, p_version, p_user_email, p_ip, p_now, p_now);
    PERFORM webhook_emit(l.tenant_id, 'activation.created', p_event_id, p_event_body, NULL, p_now);
    outcome := 'activated';
  END IF;
  -- The end user's email becomes the customer contact for expiry notices when the vendor set none.
  IF p_user_email IS NOT NULL AND l.customer_email IS NULL THEN
    UPDATE licenses SET customer_email = p_user_email, updated_at = p_now WHERE id = l.id;
  END IF;
  RETURN QUERY SELECT outcome, l.current_activations, l.max_activations;
END $$;
