-- The releases list pages along (product_id, version_order), newest version first, instead of loading a product's
-- releases whole and sorting them by semantic version. The application writes version_order on insert
-- (versionOrder in server/src/services/releases/model.ts); this function computes the same key for the releases
-- already there (lower-case hex of: each core number as its digit count and digits; 0x02 for a release, or 0x01
-- and each prerelease identifier: 0x01, digit count and digits when numeric, 0x02, its text and 0x00 otherwise).
CREATE FUNCTION release_version_order_backfill(v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  dash int := position('-' in v);
  core text := CASE WHEN dash > 0 THEN left(v, dash - 1) ELSE v END;
  part text;
  key bytea := '\x'::bytea;
BEGIN
  FOREACH part IN ARRAY string_to_array(core, '.') LOOP
    key := key || set_byte('\x00'::bytea, 0, length(part)) || convert_to(part, 'UTF8');
  END LOOP;
  IF dash = 0 THEN
    RETURN encode(key || '\x02'::bytea, 'hex');
  END IF;
  key := key || '\x01'::bytea;
  FOREACH part IN ARRAY string_to_array(substr(v, dash + 1), '.') LOOP
    IF part ~ '^[0-9]+$' THEN
      key := key || '\x01'::bytea || set_byte('\x00'::bytea, 0, length(part)) || convert_to(part, 'UTF8');
    ELSE
      key := key || '\x02'::bytea || convert_to(part, 'UTF8') || '\x00'::bytea;
    END IF;
  END LOOP;
  RETURN encode(key, 'hex');
END
$$;

-- AlterTable
ALTER TABLE "releases" ADD COLUMN "version_order" TEXT;
UPDATE "releases" SET "version_order" = release_version_order_backfill("version");
ALTER TABLE "releases" ALTER COLUMN "version_order" SET NOT NULL;

DROP FUNCTION release_version_order_backfill(text);

-- CreateIndex
CREATE UNIQUE INDEX "releases_product_id_version_order_key" ON "releases"("product_id", "version_order");
