import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server the tests create their databases on (DESIGN.md §3: each test file gets its own). */
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function withAdmin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`Tests need PostgreSQL at ${ADMIN_URL} (set TEST_DATABASE_URL, or run bash .ci/run which starts one): ${(error as Error).message}`);
  }
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

export const uniqueName = (prefix: string) => `${prefix}_${randomBytes(5).toString('hex')}`;

export async function createDatabase(name: string, template?: string): Promise<string> {
  await withAdmin((client) => client.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`));
  return databaseUrl(name);
}

export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** The login role the app runs as in tests (created by the migrator in global-setup, cluster-wide). */
export const APP_ROLE = 'keyforge_test_app';

export function appRoleUrl(url: string): string {
  const parsed = new URL(url);
  parsed.username = APP_ROLE;
  parsed.password = 'keyforge-test-app';
  return parsed.toString();
}

/** A database grant is not cloned with its template: let the app role create its job-store schema. */
export async function grantDatabaseToAppRole(name: string): Promise<void> {
  await withAdmin((client) => client.query(`GRANT CONNECT, CREATE ON DATABASE "${name}" TO ${APP_ROLE}`));
}
