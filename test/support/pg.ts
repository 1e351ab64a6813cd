import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * The server the tests create their databases on (each test file gets its own): TEST_DATABASE_URL, which
 * global-setup.ts sets for the whole run (to the cluster it provisioned when none answered), else the default.
 * Read when used, not at import: global-setup imports this module before it chooses.
 */
export const adminUrl = () => process.env.TEST_DATABASE_URL || DEFAULT_ADMIN_URL;

export function databaseUrl(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

export async function withAdmin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `Tests need PostgreSQL at ${redactUrl(adminUrl())} (set TEST_DATABASE_URL, or KEYFORGE_TEST_PG=provision to start a cluster of the run's own): ${(error as Error).message}`,
    );
  }
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** A URL fit for a log line: its password replaced. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
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
