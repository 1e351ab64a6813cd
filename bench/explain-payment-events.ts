// EXPLAIN (ANALYZE, BUFFERS) of the pending-event lookups of a payment delivery (services/payments/apply.ts) on a
// seeded table of EVENTS payment events: one shop's connection holds 90% of them, and 2% of every connection's events
// are pending (renewals of subscriptions sold before the connection existed wait for a purchase that never comes).
// A purchase that events wait for (by its payment reference and by its subscription) is applied through
// applyPaymentEvent; each statement it sends that reads pending events is explained with the schema's partial
// indexes, then, in a rolled-back transaction, with the former (connection_id, outcome) index in their place.
// Exits 1 when, with the partial indexes, a plan node of the lookups reads more than 1 in 10,000 of the events
// (at least 100 rows): the pending lookups must stay proportional to what waits, not to the table.
// Needs PostgreSQL at TEST_DATABASE_URL (as the tests); creates and drops its own database.
// Run: pnpm tsx bench/explain-payment-events.ts [EVENTS=1000000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { applyPaymentEvent } from '../server/src/services/payments/apply.js';
import { createPaymentConnection, mapPaymentPrice } from '../server/src/services/payments/connections.js';
import { createPlan } from '../server/src/services/plans.js';
import { createDatabase, dropDatabase, uniqueName } from '../test/support/pg.js';
import { seeder } from '../test/support/seed.js';
import { capturedStatements } from '../test/support/statements.js';

const EVENTS = Number(process.argv[2] ?? 1_000_000);
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
const CONNECTIONS = 10;
const name = uniqueName('kf_payments');
const url = await createDatabase(name);
const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-payments-'));
const raw = new pg.Client({ connectionString: url });
const db = await (async () => {
  await applyMigrations({ kind: 'pg', url });
  await raw.connect();
  return openDatabase({ databaseUrl: url, dataDir });
})();
try {
  const now = new Date();
  const ctx = { db, secrets: new ServerSecrets('payments-explain-secret-0123456789abcdef0123'), now, publicUrl: 'https://keyforge.test' };
  const seed = seeder({ ...ctx, now: () => now });
  const tenant = await seed.tenant({ name: 'Shop', keyPrefix: 'SHOP' });
  const product = await seed.product(tenant.id, 'Studio');
  const admin = seed.ctx(tenant.id);
  const plan = await createPlan(admin, { productId: product.id, name: 'Pro monthly', duration: 'P1M', maxActivations: 2 });
  const connections: Awaited<ReturnType<typeof createPaymentConnection>>[] = [];
  for (let index = 0; index < CONNECTIONS; index++) {
    const connection = await createPaymentConnection(admin, { provider: 'stripe', name: `Stripe ${index}`, signingSecret: `whsec_explain_${index}_0123456789` });
    await mapPaymentPrice(admin, connection.id, { priceId: 'price_pro', planId: plan.id });
    connections.push(connection);
  }
  const started = Date.now();
  // Connection 1 gets 90% of the events. A pending event without a subject waits for a payment reference (its effect
  // kept); one with a subject waits for its subscription's purchase.
  await raw.query(
    `INSERT INTO payment_events (id, tenant_id, connection_id, provider_event_id, type, outcome, subject, refs, effect, occurred_at, received_at)
     SELECT gen_random_uuid(), $1::uuid, ($2::uuid[])[CASE WHEN n % 10 = 9 THEN 2 + (n / 10) % ${CONNECTIONS - 1} ELSE 1 END], 'evt_' || n, 'invoice.paid',
            CASE WHEN n % 50 = 0 THEN 'pending' WHEN n % 7 = 0 THEN 'ignored' ELSE 'applied' END,
            CASE WHEN n % 100 = 0 THEN NULL ELSE 'sub_' || n % 200000 END, ARRAY['in_' || n, 'pi_' || n],
            CASE WHEN n % 100 = 0 THEN jsonb_build_object('kind', 'renewal', 'subject', NULL, 'refs', jsonb_build_array('in_' || n, 'pi_' || n), 'periodEnd', NULL) END,
            now() - ($3::int - n) * interval '1 second', now() - ($3::int - n) * interval '1 second'
       FROM generate_series(1, $3::int) AS n`,
    [tenant.id, connections.map((connection) => connection.id), EVENTS],
  );
  await raw.query('VACUUM ANALYZE payment_events');
  const [counts] = (await raw.query(`SELECT count(*)::int AS events, count(*) FILTER (WHERE outcome = 'pending')::int AS pending,
    count(*) FILTER (WHERE connection_id = $1)::int AS big, count(*) FILTER (WHERE connection_id = $1 AND outcome = 'pending')::int AS "bigPending" FROM payment_events`, [connections[0].id])).rows;
  console.log(`Seeded ${counts.events} payment events (${counts.pending} pending; the big connection ${counts.big}, ${counts.bigPending} pending) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

  // What the purchase finds waiting: a renewal by its invoice, and an update of its subscription.
  const waiting = async () => {
    await raw.query(
      `INSERT INTO payment_events (id, tenant_id, connection_id, provider_event_id, type, outcome, subject, refs, effect, occurred_at, received_at)
       VALUES (gen_random_uuid(), $1, $2, 'evt_wait_ref_' || gen_random_uuid(), 'invoice.paid', 'pending', NULL, ARRAY['in_target'],
               '{"kind":"renewal","subject":null,"refs":["in_target"],"periodEnd":null}', now(), now()),
              (gen_random_uuid(), $1, $2, 'evt_wait_sub_' || gen_random_uuid(), 'customer.subscription.updated', 'pending', 'sub_target', '{}', NULL, now(), now())`,
      [tenant.id, connections[0].id],
    );
  };
  await waiting();
  const event = {
    id: 'evt_target_purchase',
    type: 'invoice.paid',
    occurredAt: now,
    effect: { kind: 'purchase' as const, subject: 'sub_target', refs: ['in_target'], priceId: 'price_pro', quantity: 1, customerEmail: 'buyer@example.com', periodEnd: new Date(now.getTime() + 30 * 86_400_000) },
  };
  let result: unknown;
  const sent = await capturedStatements(async () => {
    result = await applyPaymentEvent(ctx, connections[0], event);
  });
  console.log(`applyPaymentEvent: ${JSON.stringify(result)}\n`);
  const pendingLookups = sent.filter((statement) => /payment_events/.test(statement.text) && statement.values.includes('pending'));
  if (pendingLookups.length < 2) throw new Error(`expected the two pending lookups, found ${pendingLookups.length}`);
  // The same statements on the same data: events wait again (the purchase consumed them).
  await waiting();
  await raw.query('ANALYZE payment_events');

  const explainAll = async (label: string) => {
    console.log(`## ${label}\n`);
    for (const { text, values } of pendingLookups) {
      await raw.query('SAVEPOINT explain');
      const plan = await raw.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
      await raw.query('ROLLBACK TO SAVEPOINT explain');
      console.log(`${text}\n${JSON.stringify(values)}\n${plan.rows.map((row) => row['QUERY PLAN']).join('\n')}\n`);
    }
  };
  /** The rows each plan node of the lookups reads (returned, and removed by a filter), as EXPLAIN (ANALYZE, FORMAT JSON) counts them. */
  const rowsRead = async () => {
    const read: { node: string; rows: number }[] = [];
    for (const { text, values } of pendingLookups) {
      await raw.query('SAVEPOINT explain');
      const [row] = (await raw.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values)).rows;
      await raw.query('ROLLBACK TO SAVEPOINT explain');
      for (const node of nodesOf(row['QUERY PLAN'][0].Plan)) {
        const rows = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops'];
        read.push({ node: `${node['Node Type']}${node['Index Name'] ? ` on ${node['Index Name']}` : ''}`, rows });
      }
    }
    return read;
  };
  await raw.query('BEGIN');
  await explainAll('With the partial indexes');
  // The verdict: the lookups read the events that wait (a few), never a share of the connection's events.
  const widest = (await rowsRead()).sort((a, b) => b.rows - a.rows)[0];
  const bound = Math.max(100, Math.ceil(counts.events / 10_000));
  console.log(`Widest plan node with the partial indexes: ${widest.node}, ${widest.rows} rows read (bound ${bound})\n`);
  if (widest.rows > bound) process.exitCode = 1;
  await raw.query(`DROP INDEX payment_events_pending_subject_idx; DROP INDEX payment_events_pending_refs_idx;
                   CREATE INDEX payment_events_connection_id_outcome_idx ON payment_events (connection_id, outcome); ANALYZE payment_events`);
  await explainAll('With the former (connection_id, outcome) index instead');
  await raw.query('ROLLBACK');
} finally {
  await db.close();
  await raw.end().catch(() => {});
  await dropDatabase(name);
  rmSync(dataDir, { recursive: true, force: true });
}
