import pg from 'pg';

/** A statement as sent to PostgreSQL: its text and parameters. */
export interface SentStatement {
  text: string;
  values: unknown[];
}

/**
 * Every statement `run` sends through the pg driver (Prisma's adapter included), recorded at
 * `pg.Client.prototype.query`: for EXPLAIN-ing what a service function really asks. Not reentrant: one capture at a time.
 */
export async function capturedStatements(run: () => Promise<unknown>): Promise<SentStatement[]> {
  const sent: SentStatement[] = [];
  const query = pg.Client.prototype.query as (...args: any[]) => any; // eslint-disable-line @typescript-eslint/no-explicit-any
  pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) { // eslint-disable-line @typescript-eslint/no-explicit-any
    const [config, values] = args;
    if (typeof config === 'string') sent.push({ text: config, values: values ?? [] });
    else if (config && typeof config.text === 'string') sent.push({ text: config.text, values: config.values ?? values ?? [] });
    return query.apply(this, args);
  } as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    await run();
  } finally {
    pg.Client.prototype.query = query as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  }
  return sent;
}

/**
 * The SELECT statements `run` sends (capturedStatements): bench/scale.ts keeps their plans,
 * test/license-search-plans.test.ts checks their shape.
 */
export async function capturedSelects(run: () => Promise<unknown>): Promise<SentStatement[]> {
  return (await capturedStatements(run)).filter((statement) => /^\s*(SELECT|WITH|\()/i.test(statement.text));
}
