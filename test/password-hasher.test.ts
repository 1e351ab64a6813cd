import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { getPriority } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { argon2Hash, argon2Verify, hasherPid } from '../server/src/services/auth/password-hasher.js';

// The argon2 hasher's child process is a real module (server/src/services/auth/password-hasher-child.ts), started
// from the sources through tsx and from the built server as plain JavaScript, at nice 19 (docs/security.md).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
const built = mkdtempSync(path.join(ROOT, 'server/.hasher-build-'));
afterAll(() => rmSync(built, { recursive: true, force: true }));

describe('the password hasher child process', () => {
  it('from the sources (tests, pnpm worker): the child module runs through tsx at the lowest CPU priority', async () => {
    const digest = await argon2Hash('correct horse battery');
    expect(digest).toMatch(/^\$argon2id\$/);
    expect(await argon2Verify(digest, 'correct horse battery')).toBe(true);
    expect(await argon2Verify(digest, 'wrong horse battery')).toBe(false);
    const pid = hasherPid();
    expect(pid).not.toBeNull();
    expect(pid).not.toBe(process.pid);
    expect(getPriority(pid!)).toBe(19);
    expect(commandLine(pid!).at(-1)).toBe(path.join(ROOT, 'server/src/services/auth/password-hasher-child.ts'));
  });

  it('from the built server (pnpm start): the compiled child module runs as JavaScript at the lowest CPU priority', () => {
    // The hasher and its child compiled as `tsc -p server/tsconfig.build.json` compiles them, inside server/ so
    // that @node-rs/argon2 resolves as it does from server/dist.
    const tsc = path.join(ROOT, 'node_modules/.bin/tsc');
    execFileSync(tsc, ['--outDir', built, '--rootDir', path.join(ROOT, 'server/src/services/auth'), '--module', 'nodenext', '--target', 'es2022', '--skipLibCheck', '--types', 'node',
      path.join(ROOT, 'server/src/services/auth/password-hasher.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    const script = `
      const { argon2Hash, argon2Verify, hasherPid } = await import(${JSON.stringify(path.join(built, 'password-hasher.js'))});
      const { getPriority } = await import('node:os');
      const { readFileSync } = await import('node:fs');
      const digest = await argon2Hash('correct horse battery');
      const pid = hasherPid();
      console.log(JSON.stringify({ ok: await argon2Verify(digest, 'correct horse battery'), wrong: await argon2Verify(digest, 'nope'), self: process.pid, pid, nice: getPriority(pid),
        cmdline: readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0').filter(Boolean) }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 }));
    expect(out).toMatchObject({ ok: true, wrong: false, nice: 19 });
    expect(out.pid).not.toBe(out.self);
    expect(out.cmdline.slice(1)).toEqual([path.join(built, 'password-hasher-child.js')]);
  }, 150_000);
});
