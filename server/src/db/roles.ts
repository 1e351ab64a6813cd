import pg from 'pg';

/**
 * Tables the app role may read and append to, never change: the activity log, its signed anchors and the verdicts of
 * its verification, the signing keys (rotation only adds a key; retiring one, which would make every token it
 * signed UNVERIFIABLE, is the owner's act), and the record of every license key digest ever issued (a deleted row would
 * let a retired key be issued again).
 */
export const APPEND_ONLY_TABLES = ['audit_log', 'audit_checkpoints', 'audit_verdicts', 'signing_keys', 'license_key_digests'];
/** Tables the app role may only read: written by migrations alone. */
export const READ_ONLY_TABLES = ['audit_chain_legacy', '_prisma_migrations'];

function userOf(url: string): string {
  return decodeURIComponent(new URL(url).username || process.env.PGUSER || process.env.USER || '');
}

/** True when both URLs log in as the same role (a one-URL setup). */
export function sameRole(ownerUrl: string, appUrl: string): boolean {
  return userOf(ownerUrl) === userOf(appUrl);
}

/**
 * Run by the migrator, as the owner of the schema: creates the app's login role if missing and grants it
 * what the server needs and nothing more. Every table gets SELECT/INSERT/UPDATE/DELETE, now and (through
 * default privileges) for tables later migrations create; the append-only tables (the activity log's, the signing
 * keys) only SELECT and INSERT. The app
 * role owns no table, so it cannot ALTER, disable triggers or TRUNCATE.
 */
export async function grantAppRole(ownerUrl: string, appUrl: string): Promise<{ role: string; created: boolean }> {
  const app = new URL(appUrl);
  const role = userOf(appUrl);
  if (!role) throw new Error('DATABASE_URL names no user: the app role cannot be set up');
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const id = client.escapeIdentifier(role);
    const { rows } = await client.query<{ exists: boolean; db: string }>('SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS exists, current_database() AS db', [role]);
    let created = false;
    if (!rows[0].exists) {
      const password = app.password ? ` PASSWORD ${client.escapeLiteral(decodeURIComponent(app.password))}` : '';
      try {
        await client.query(`CREATE ROLE ${id} LOGIN${password}`);
        created = true;
      } catch (error) {
        // Two migrators at once: the other one created it.
        if ((error as { code?: string }).code !== '42710') throw new Error(`cannot create the app role ${role} (${(error as Error).message}); create it yourself (CREATE ROLE ${role} LOGIN PASSWORD '…') and run the migration again`);
      }
    }
    const db = client.escapeIdentifier(rows[0].db);
    const list = (tables: string[]) => tables.map((t) => client.escapeIdentifier(t)).join(', ');
    await client.query(`
      GRANT CONNECT, CREATE ON DATABASE ${db} TO ${id};
      GRANT USAGE ON SCHEMA public TO ${id};
      GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${id};
      GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${id};
      ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${id};
      ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO ${id};
      REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ${list(APPEND_ONLY_TABLES)} FROM ${id};
      REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ${list(READ_ONLY_TABLES)} FROM ${id};
    `);
    return { role, created };
  } finally {
    await client.end();
  }
}

/**
 * Whether the connected role could rewrite the activity log (owner, superuser, or UPDATE/DELETE/TRUNCATE
 * rights): then only the signed checkpoints, not the database, protect it.
 */
export async function canRewriteAuditLog(query: (sql: string) => Promise<{ privileged: boolean }[]>): Promise<boolean> {
  const [row] = await query(`SELECT (pg_has_role(c.relowner, 'USAGE')
      OR has_table_privilege(c.oid, 'UPDATE') OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE')) AS privileged
    FROM pg_class c WHERE c.oid = 'audit_log'::regclass`);
  return row?.privileged ?? false;
}
