-- A rotated refresh token may be presented once more within a short grace window (a browser that died before storing
-- its successor): reused_at records that this one reuse was spent, so any further use still revokes the family.
ALTER TABLE "refresh_tokens" ADD COLUMN "reused_at" TIMESTAMPTZ(3);
