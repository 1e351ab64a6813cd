import pg from 'pg';

/** One statement (or a script) on its own connection: the benches' seeding and bookkeeping. */
export async function sql(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}
