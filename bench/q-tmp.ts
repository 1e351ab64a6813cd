import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openDatabase } from '../server/src/db/database.js';
import { floatingPoolConsumption } from '../server/src/services/floating/management.js';
import { listLicenses } from '../server/src/services/licenses.js';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
const db = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:5432/keyforge_scale', dataDir: mkdtempSync(path.join(tmpdir(), 'q-')) });
const ctx = { db, now: new Date(), secrets: new ServerSecrets('scale-bench-secret-0123456789abcdef0123456789') } as never;
const T = '00000000-0000-4000-8000-000000000001';
const actor = { tenantId: T, role: 'CompanyAdmin', kind: 'user', userId: 'b', label: 'b' } as never;
const day = new Date(); day.setUTCHours(0, 0, 0, 0);
const runs: Record<string, () => Promise<unknown>> = {
  today: () => floatingPoolConsumption(ctx, T, { from: day, to: new Date(), bucket: 'hour' }),
  month: () => floatingPoolConsumption(ctx, T, { from: new Date(day.getTime() - 29 * 86400000), to: new Date(), bucket: 'day' }),
  email: () => listLicenses(ctx, actor, { search: 'customer4242' }),
  hint: () => listLicenses(ctx, actor, { search: '-…-AB' }),
};
for (const which of process.argv.slice(2)) {
  await runs[which]();
  const t0 = performance.now();
  for (let i = 0; i < 5; i++) await runs[which]();
  console.log(which, ((performance.now() - t0) / 5).toFixed(1), 'ms avg');
}
await db.close();
