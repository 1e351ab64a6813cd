import { jwtVerify, createLocalJWKSet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../server/src/logger.js';
import { openDeps, type OpenDeps } from '../server/src/deps.js';
import { JWKS_MAX_AGE_SECONDS, loadTokenSigner, publicJwks, rotateSigningKey } from '../server/src/services/signing/signing-keys.js';
import { runCli } from './support/processes.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { waitUntil } from './support/wait.js';

/** `signing-key:rotate` run while a process is up; that process signs with the new key soon after. */
let t: TestApp;
let running: OpenDeps;
beforeAll(async () => {
  t = await startTestApp();
  // A second process's view of the same database, re-reading the active key every second.
  running = await openDeps({ ...t.config, signingKeyRefreshSeconds: 1 }, createLogger('silent'));
});
afterAll(async () => {
  await running?.close();
  await t?.close();
});

describe('signing key rotation', () => {
  it('a running process picks up a rotation by another process; the old key stays in the JWKS', async () => {
    const times = { issuedAt: new Date(), expiresAt: new Date(Date.now() + 3_600_000) };
    const oldKid = running.deps.signer.kid;
    const oldToken = await running.deps.signer.sign({ sub: 'before' }, times);

    const result = runCli(['signing-key:rotate', '--immediately'], { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir });
    expect(result.status, result.stderr).toBe(0);
    const newKid = result.json?.kid as string;
    expect(newKid).toBeTruthy();
    expect(newKid).not.toBe(oldKid);

    const deadline = Date.now() + 30_000;
    while (running.deps.signer.kid !== newKid && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(running.deps.signer.kid).toBe(newKid);

    const jwks = await publicJwks(running.deps);
    expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
    const keySet = createLocalJWKSet(jwks);
    const newToken = await running.deps.signer.sign({ sub: 'after' }, times);
    expect((await jwtVerify(newToken, keySet)).protectedHeader.kid).toBe(newKid);
    expect((await jwtVerify(oldToken, keySet)).protectedHeader.kid).toBe(oldKid);

    // A rotation in-process too (the same mechanism), and the refresh keeps following.
    const { kid: third } = await rotateSigningKey({ db: running.deps.db, secrets: running.deps.secrets, now: new Date() }, { immediately: true });
    const deadline2 = Date.now() + 30_000;
    while (running.deps.signer.kid !== third && Date.now() < deadline2) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(running.deps.signer.kid).toBe(third);
  }, 120_000);
});

describe('a rotated key is published before it signs', () => {
  it('the new key is in the JWKS at once and signs only once a JWKS cache lifetime (its max-age) has passed', async () => {
    const clock = new TestClock();
    const process2 = await openDeps({ ...t.config, signingKeyRefreshSeconds: 1 }, createLogger('silent'), clock.now);
    try {
      const oldKid = process2.deps.signer.kid;
      const { kid, signsFrom } = await rotateSigningKey({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now() });

      // Published now, with the max-age clients and CDNs cache it for; signing waits that long.
      const served = await t.get('/.well-known/jwks.json');
      expect(served.headers.get('cache-control')).toBe(`public, max-age=${JWKS_MAX_AGE_SECONDS}`);
      expect(served.json.keys.map((key: { kid: string }) => key.kid)).toEqual(expect.arrayContaining([oldKid, kid]));
      expect(signsFrom.getTime() - clock.now().getTime()).toBe(JWKS_MAX_AGE_SECONDS * 1000);
      const ctx = { db: t.deps.db, secrets: t.deps.secrets };
      expect((await loadTokenSigner({ ...ctx, now: new Date(signsFrom.getTime() - 1) }, t.config.publicUrl)).kid).toBe(oldKid);
      expect((await loadTokenSigner({ ...ctx, now: signsFrom }, t.config.publicUrl)).kid).toBe(kid);

      // The running process switches once its clock reaches signsFrom; a JWKS cached at rotation verifies its tokens.
      clock.advance(JWKS_MAX_AGE_SECONDS * 1000);
      await waitUntil(() => process2.deps.signer.kid === kid, { what: 'the process to sign with the new key' });
      const token = await process2.deps.signer.sign({ sub: 'after' }, { issuedAt: clock.now(), expiresAt: new Date(clock.now().getTime() + 3_600_000) });
      const { protectedHeader } = await jwtVerify(token, createLocalJWKSet(served.json), { currentDate: clock.now() });
      expect(protectedHeader.kid).toBe(kid);
    } finally {
      await process2.close();
    }
  }, 60_000);
});
