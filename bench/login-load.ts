// `pnpm bench:login-load`: does a sign-in flood starve the licensing API? Starts the server (tsx) on a scratch
// database and measures public validate latency with autocannon, alone and while LOGIN_CONCURRENCY clients
// sign in with wrong passwords as fast as they can (sign-in rate limits raised so only the argon2 bound acts).
// Env: PASSWORD_HASH_CONCURRENCY (the server's bound, default: half the cores), LOGIN_CONCURRENCY (16),
// BENCH_DURATION (s, 8), BENCH_ADMIN_URL.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import { applyMigrations } from '../server/src/db/migrate.js';
import { seedDatabase } from '../test/support/seed.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const LOGINS = Number(process.env.LOGIN_CONCURRENCY ?? 16);
const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `kf_bench_login_${randomBytes(4).toString('hex')}`;
const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
const secret = randomBytes(32).toString('base64url');
const port = 20000 + Math.floor(Math.random() * 20000);
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-bench-login-'));
let server: ReturnType<typeof spawn> | undefined;
try {
  await applyMigrations({ kind: 'pg', url });
  const key = await seedDatabase(url, secret, async (seed) => {
    const tenant = await seed.tenant({ name: 'Login Bench', keyPrefix: 'LOGIN' });
    const product = await seed.product(tenant.id, 'Studio');
    await seed.user(tenant.id, { email: 'admin@login.test', role: 'CompanyAdmin' });
    return (await seed.license(tenant.id, product.id, { maxActivations: 5 })).key;
  });

  server = spawn('pnpm', ['exec', 'tsx', 'server/src/main.ts'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: url, SERVER_SECRET: secret, DATA_DIR: dataDir, LOG_LEVEL: 'warn', JOBS_WORKER: 'false',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '100000000', RATE_LIMIT_TENANT_PER_MINUTE: '100000000', RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '100000000', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '100000000' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  for (let i = 0; ; i++) {
    if ((await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok) break;
    if (i > 120) throw new Error('server did not start');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }

  const validate = () =>
    autocannon({ url: `http://127.0.0.1:${port}`, connections: 4, duration: DURATION, requests: [{ method: 'POST', path: '/api/v1/validate', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: key }) }] });
  await autocannon({ url: `http://127.0.0.1:${port}`, connections: 4, duration: 2, requests: [{ method: 'POST', path: '/api/v1/validate', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: key }) }] });
  const alone = await validate();

  let stop = false;
  let logins = 0;
  const loginLoop = async () => {
    while (!stop) {
      await fetch(`http://127.0.0.1:${port}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation { login(input: { email: "admin@login.test", password: "wrong password!" }) { __typename } }' }) }).then((r) => r.text());
      logins++;
    }
  };
  // Lockouts would let most attempts skip argon2: clear them continuously so every attempt hashes.
  const lockDb = new pg.Client({ connectionString: url });
  await lockDb.connect();
  const clearer = setInterval(() => void lockDb.query('DELETE FROM login_failures').catch(() => undefined), 50);
  const loops = Array.from({ length: LOGINS }, loginLoop);
  const loaded = await validate();
  stop = true;
  await Promise.all(loops);
  clearInterval(clearer);
  await lockDb.end();

  const row = (label: string, r: Result) => `| ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} |`;
  console.log(`\nValidate under a sign-in flood (PASSWORD_HASH_CONCURRENCY=${process.env.PASSWORD_HASH_CONCURRENCY ?? 'default'}, ${LOGINS} login clients, ${DURATION} s)\n`);
  console.log('| validate | requests/s | p50 ms | p99 ms |\n|---|---:|---:|---:|');
  console.log(row('alone', alone));
  console.log(row(`with ${LOGINS} concurrent logins (${Math.round(logins / DURATION)} logins/s)`, loaded));
} finally {
  server?.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  rmSync(dataDir, { recursive: true, force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
