import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

/**
 * Every embedded PGlite the app opens (server, migrator and its shadow database, CLI): with the extensions the
 * migrations create — pg_trgm, for the trigram indexes behind the license and activity-log text search, and
 * btree_gin, for the tenant column of the license search's trigram indexes.
 * In memory when `dataDir` is omitted. (PGlite 0.5 ignores the options when the first argument is undefined.)
 */
export function createPGlite(dataDir?: string): PGlite {
  const options = { extensions: { pg_trgm, btree_gin } };
  return dataDir === undefined ? new PGlite(options) : new PGlite(dataDir, options);
}
