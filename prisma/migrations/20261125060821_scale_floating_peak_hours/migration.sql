-- CreateTable
CREATE TABLE "floating_peak_hours" (
    "tenant_id" UUID NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "peak" INTEGER NOT NULL,

    CONSTRAINT "floating_peak_hours_pkey" PRIMARY KEY ("tenant_id","hour")
);

-- A session holds a seat over [created_at, coalesce(ended_at, lease_expires_at)). Any change empties the cached hours
-- whose level it changes: the whole interval for an insert or a delete (or a moved start), the stretch between the
-- old and the new end otherwise. A checkout, heartbeat or checkin changes now and later only, so it finds no cached
-- (completed) hour to empty.
CREATE FUNCTION floating_peak_hours_forget(tenant uuid, lo timestamptz, hi timestamptz) RETURNS void LANGUAGE sql AS $$
  DELETE FROM floating_peak_hours WHERE tenant_id = tenant AND hour > lo - interval '1 hour' AND hour < hi
$$;

CREATE FUNCTION floating_peak_hours_invalidate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.tenant_id = NEW.tenant_id AND OLD.created_at = NEW.created_at THEN
    PERFORM floating_peak_hours_forget(NEW.tenant_id,
      least(coalesce(OLD.ended_at, OLD.lease_expires_at), coalesce(NEW.ended_at, NEW.lease_expires_at)),
      greatest(coalesce(OLD.ended_at, OLD.lease_expires_at), coalesce(NEW.ended_at, NEW.lease_expires_at)));
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN PERFORM floating_peak_hours_forget(OLD.tenant_id, OLD.created_at, coalesce(OLD.ended_at, OLD.lease_expires_at)); END IF;
  IF TG_OP <> 'DELETE' THEN PERFORM floating_peak_hours_forget(NEW.tenant_id, NEW.created_at, coalesce(NEW.ended_at, NEW.lease_expires_at)); END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER floating_peak_hours_insert_delete AFTER INSERT OR DELETE ON floating_sessions FOR EACH ROW EXECUTE FUNCTION floating_peak_hours_invalidate();
CREATE TRIGGER floating_peak_hours_update AFTER UPDATE OF tenant_id, created_at, ended_at, lease_expires_at ON floating_sessions FOR EACH ROW
  WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR coalesce(OLD.ended_at, OLD.lease_expires_at) IS DISTINCT FROM coalesce(NEW.ended_at, NEW.lease_expires_at))
  EXECUTE FUNCTION floating_peak_hours_invalidate();
