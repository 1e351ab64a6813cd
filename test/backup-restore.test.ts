import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { revokeLicense } from '../server/src/services/licenses/management.js';
import { rotateSigningKey } from '../server/src/services/signing/signing-keys.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { itWith, needCommands } from './support/optional.js';
import { appRoleUrl, createDatabase, dropDatabase, grantDatabaseToAppRole, uniqueName } from './support/pg.js';
import { runCli, startServerProcess, type ServerProcess } from './support/processes.js';
import { seeder } from './support/seed.js';

/**
 * Backup and restore on PostgreSQL, as the operator docs describe it: `pg_dump -Fc` of the database (the job store's
 * `agenda` schema is in it), `pg_restore` into a new database on a cluster with the same roles, the app role's
 * database grant, and the same SERVER_SECRET. The restored installation must answer every key as before, keep its
 * activations, publish the same signing keys, and hold an activity log that verifies against the checkpoint and the
 * JWKS kept from before the backup.
 */
const tools = needCommands('pg_dump', 'pg_restore', 'psql');

let t: TestApp;
let work: string;
let restoredName: string | undefined;
let server: ServerProcess | undefined;

beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow() });
  work = mkdtempSync(path.join(tmpdir(), 'kf-backup-'));
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await t?.close();
  if (restoredName) await dropDatabase(restoredName);
  rmSync(work, { recursive: true, force: true });
});

const validate = async (baseUrl: string, licenseKey: string, deviceId: string) => {
  const response = await fetch(`${baseUrl}/api/v1/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey, deviceId, requireActivation: true }) });
  expect(response.status).toBe(200);
  return (await response.json()) as { isValid: boolean; errorCode: string | null; remainingActivations: number; offlineCacheToken: string | null };
};

describe('backup and restore (PostgreSQL)', () => {
  itWith(tools)('pg_dump -Fc, pg_restore into a new database: keys, activations, signing keys and the activity log carry over', async () => {
    // A populated installation: licenses (one revoked), activations, a rotated signing key, an activity log with a
    // signed checkpoint kept apart, and entries after it.
    const seed = seeder({ db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now });
    const { tenant, product } = await (async () => {
      const created = await seed.tenant();
      return { tenant: created, product: await seed.product(created.id) };
    })();
    const licenses = [];
    for (let index = 0; index < 4; index++) licenses.push(await seed.license(tenant.id, product.id, { maxActivations: 3, features: ['export'] }));
    for (const [index, { key }] of licenses.entries()) {
      for (let device = 0; device <= index % 3; device++) expect((await t.activate({ licenseKey: key, deviceId: `device-${device}` })).json).toMatchObject({ isValid: true });
    }
    // A running server process on it, with its job scheduler (it creates the job store's `agenda` schema): the
    // backup is taken while it serves.
    const env = { DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, LOG_LEVEL: 'warn' };
    const original = await startServerProcess(env);
    const before = await Promise.all(licenses.map(({ key }) => validate(original.url, key, 'device-0')));
    await rotateSigningKey({ db: t.deps.db, secrets: t.deps.secrets, now: new Date() }, { immediately: true });
    const kept = path.join(work, 'kept.json');
    const checkpoints = runCli(['audit:checkpoints', '--tenant', 'ACME', '--out', kept, '--json'], env);
    expect(checkpoints, checkpoints.stderr).toMatchObject({ status: 0, json: { latestCheckpointSeq: expect.any(Number) } });
    await revokeLicense(seed.ctx(tenant.id), licenses[3].license.id); // after the checkpoint
    const jwksBefore = (await (await fetch(`${original.url}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    expect(jwksBefore.keys).toHaveLength(2);
    const jwksFile = path.join(work, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify(jwksBefore));
    const tokenBefore = (await validate(original.url, licenses[0].key, 'device-0')).offlineCacheToken!;

    // The backup: one custom-format dump, the database's own and the job store's schema together.
    const dump = path.join(work, 'keyforge.dump');
    execFileSync('pg_dump', ['-Fc', '--file', dump, t.ownerUrl], { stdio: 'pipe' });
    expect(execFileSync('pg_restore', ['--list', dump], { encoding: 'utf8' })).toMatch(/SCHEMA - agenda /);
    await original.stop();
    const jobs = (url: string) => execFileSync('psql', [url, '-Atc', 'SELECT name FROM agenda.agenda_jobs ORDER BY name'], { encoding: 'utf8' });
    const jobsBefore = jobs(t.ownerUrl);
    expect(jobsBefore).toContain('expiry-notifications');

    // The restore: a new empty database, the app role's grant on it, pg_restore (owners and table grants kept).
    restoredName = uniqueName('kf_restored');
    const restoredOwnerUrl = await createDatabase(restoredName);
    await grantDatabaseToAppRole(restoredName);
    execFileSync('pg_restore', ['--exit-on-error', '--dbname', restoredOwnerUrl, dump], { stdio: 'pipe' });

    expect(jobs(restoredOwnerUrl)).toBe(jobsBefore); // the job store's schedules

    // A new installation on it: the same SERVER_SECRET, a new DATA_DIR.
    const dataDir = path.join(work, 'restored-data');
    const restoredEnv = { DATABASE_URL: appRoleUrl(restoredOwnerUrl), SERVER_SECRET: t.config.serverSecret!, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    server = await startServerProcess({ ...restoredEnv, JOBS_WORKER: 'false' });

    // The same signing keys are published, and tokens of either side verify with the other's keys.
    const jwksAfter = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    expect(jwksAfter).toEqual(jwksBefore);
    await jwtVerify(tokenBefore, createLocalJWKSet(jwksAfter), { algorithms: ['EdDSA'] });

    // Every key answers as before (the revoked one now refused), with its activations.
    for (const [index, { key }] of licenses.entries()) {
      const after = await validate(server.url, key, 'device-0');
      if (index === 3) {
        expect(after).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' });
        continue;
      }
      expect(after).toMatchObject({ isValid: true, errorCode: null, remainingActivations: before[index].remainingActivations });
      const { payload } = await jwtVerify(after.offlineCacheToken!, createLocalJWKSet(jwksBefore), { algorithms: ['EdDSA'] });
      expect(payload).toMatchObject({ sub: licenses[index].license.id, device: 'device-0', deviceActivated: true });
      expect(jwksBefore.keys.map((jwk) => jwk.kid)).toContain(decodeProtectedHeader(after.offlineCacheToken!).kid);
    }
    // The nonce store and seats work on the restored database: a new device takes a seat.
    const nonce = ((await (await fetch(`${server.url}/api/v1/nonce`)).json()) as { nonce: string }).nonce;
    const activated = await fetch(`${server.url}/api/v1/activate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: licenses[0].key, nonce, deviceId: 'device-new' }) });
    expect(await activated.json()).toMatchObject({ isValid: true, remainingActivations: 1 });

    // The activity log: re-hashed under the secret, it extends the checkpoint kept before the backup…
    const check = runCli(['audit:check', '--tenant', 'ACME', '--checkpoints', kept, '--json'], restoredEnv);
    expect(check, check.stderr).toMatchObject({ status: 0, json: { valid: true } });
    // …and its export verifies offline against the JWKS kept before the backup, entry content included.
    const exported = path.join(work, 'audit.json');
    expect(runCli(['audit:export', '--tenant', 'ACME', '--out', exported, '--json'], restoredEnv)).toMatchObject({ status: 0 });
    const entries = (JSON.parse(readFileSync(exported, 'utf8')) as { entries: { action: string }[] }).entries;
    expect(entries.map((entry) => entry.action)).toContain('RevokeLicense');
    const verified = runCli(['audit:verify', '--file', exported, '--jwks', jwksFile, '--checkpoints', kept, '--with-secret', '--json'], restoredEnv);
    expect(verified, verified.stderr).toMatchObject({ status: 0, json: { valid: true, contentVerified: true, keptCheckpointsVerified: 1, problems: [] } });

    // Restored under another secret, the same log does not verify: the secret is part of the backup.
    const otherSecret = runCli(['audit:check', '--tenant', 'ACME', '--json'], { ...restoredEnv, SERVER_SECRET: Buffer.alloc(48, 7).toString('base64') });
    expect(otherSecret.status).not.toBe(0);
  }, 420_000); // two server starts and five cold CLI runs: under a minute on an idle machine, minutes on a loaded one
});
