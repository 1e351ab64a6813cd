-- A rotated key is published in the JWKS before it signs (README "Key rotation"): it signs from signs_from.
ALTER TABLE "signing_keys" ADD COLUMN "signs_from" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;
UPDATE "signing_keys" SET "signs_from" = "created_at";
