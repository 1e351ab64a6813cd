-- CreateTable
CREATE TABLE "license_key_digests" (
    "key_digest" TEXT NOT NULL,

    CONSTRAINT "license_key_digests_pkey" PRIMARY KEY ("key_digest")
);

-- ─── Every key digest ever given a license, installation-wide ─────────────────────────────────────────────────────
-- licenses.key_digest is unique among live keys, but a key retired by a reissue left it (at once, or after its
-- overlap in retired_license_keys, which housekeeping then purges): another company could import it and make it
-- valid again. Each digest a license gets is recorded here, by the database itself, and a second one with the same
-- digest is a unique violation (23505) whichever company, path or statement writes it. Nothing deletes rows.
CREATE FUNCTION license_key_digests_record_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO license_key_digests (key_digest) SELECT key_digest FROM inserted_licenses;
  RETURN NULL;
END $$;
-- One INSERT … SELECT per statement: a bulk insert of licenses pays one set-based insert, not one per row.
CREATE TRIGGER license_key_digests_insert AFTER INSERT ON licenses
  REFERENCING NEW TABLE AS inserted_licenses FOR EACH STATEMENT EXECUTE FUNCTION license_key_digests_record_inserted();

CREATE FUNCTION license_key_digests_record_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO license_key_digests (key_digest) VALUES (NEW.key_digest);
  RETURN NULL;
END $$;
-- Only a statement that sets key_digest (a reissue) fires it, and only when the digest changes.
CREATE TRIGGER license_key_digests_update AFTER UPDATE OF key_digest ON licenses
  FOR EACH ROW WHEN (OLD.key_digest IS DISTINCT FROM NEW.key_digest) EXECUTE FUNCTION license_key_digests_record_changed();

-- The digests in use now: live keys (unique already) and former keys still in their overlap. A former key that is
-- also a live key (possible before this migration: a key retired in one company, imported in another) is recorded
-- once; such licenses are counted in a notice for the operator, and keep working as they did.
INSERT INTO license_key_digests (key_digest)
  SELECT key_digest FROM licenses UNION SELECT key_digest FROM retired_license_keys
  ON CONFLICT DO NOTHING;
DO $$
DECLARE
  shared integer;
BEGIN
  SELECT count(*) INTO shared FROM retired_license_keys r JOIN licenses l USING (key_digest) WHERE l.id <> r.license_id;
  IF shared > 0 THEN
    RAISE NOTICE 'license_key_digests: % license(s) hold a key another license retired (reissue); reissue them to give them a key of their own', shared;
  END IF;
END $$;
