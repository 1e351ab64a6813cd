-- The subscribers of an event hold their endpoint rows (FOR KEY SHARE, the lock the delivery's foreign key takes
-- anyway) until the event's transaction ends, and skip an endpoint being deleted (SKIP LOCKED: a delete holds its
-- row FOR UPDATE). So a write that emits an event never waits for an endpoint's deletion, which itself waits for the
-- activity log's lock that such a write may hold (a deadlock), and never inserts a delivery for an endpoint deleted
-- meanwhile (a foreign-key error). A delete waits for the events already holding its row, then removes their
-- deliveries with it. Locking needs a volatile function.
CREATE OR REPLACE FUNCTION webhook_subscribers(p_tenant uuid, p_type text) RETURNS SETOF uuid LANGUAGE sql VOLATILE AS $$
  SELECT e.id FROM webhook_endpoints e
   WHERE e.tenant_id = p_tenant AND e.enabled
     AND (p_type = ANY(e.event_types) OR (cardinality(e.event_types) = 0 AND p_type <> 'webhook.test'))
     FOR KEY SHARE SKIP LOCKED
$$;
