-- Partial unique indexes (the same uniqueness: no key prefix is null, and nulls never collide): PostgreSQL counts
-- only full unique indexes as key columns, so changing a key prefix or a portal handle locks the company's row
-- FOR NO KEY UPDATE, which an insert referencing the company (FOR KEY SHARE) does not wait for.
DROP INDEX "tenants_key_prefix_key";
DROP INDEX "tenants_portal_handle_key";
CREATE UNIQUE INDEX "tenants_key_prefix_key" ON "tenants"("key_prefix") WHERE (key_prefix IS NOT NULL);
CREATE UNIQUE INDEX "tenants_portal_handle_key" ON "tenants"("portal_handle") WHERE (portal_handle IS NOT NULL);
