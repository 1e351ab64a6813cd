import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

/**
 * Every embedded PGlite the app opens (server, migrator and its shadow database, CLI): with the extensions the
 * migrations create — pg_trgm, for the trigram indexes behind the license and activity-log text search.
 * In memory when `dataDir` is omitted. (PGlite 0.5 ignores the options when the first argument is undefined.)
 */
export function createPGlite(dataDir?: string): PGlite {
  const options = { extensions: { pg_trgm } };
  return dataDir === undefined ? new PGlite(options) : new PGlite(dataDir, options);
}
