import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { beforeAll, describe, it } from 'vitest';

/**
 * What some suites need besides Node.js and PostgreSQL — Redis, Chromium, curl and jq. A suite runs when its need is
 * there; when not, it is skipped, with the reason in the test's name and on the console. `.ci/run` installs them
 * all and sets KEYFORGE_TEST_STRICT=1: there nothing is skipped, and a missing need fails the test with the reason
 * (docs/development.md › "What `pnpm test` needs").
 */
export interface Need {
  what: string;
  /** Why it cannot run here; undefined when it can. */
  missing?: string;
}

const STRICT = process.env.KEYFORGE_TEST_STRICT === '1';

/** Whether something accepts a TCP connection on host:port within the timeout. */
export function answers(host: string, port: number, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Redis at TEST_REDIS_URL (default redis://127.0.0.1:6379). */
export async function needRedis(): Promise<Need & { url: string }> {
  const url = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
  const { hostname, port } = new URL(url);
  const up = await answers(hostname, Number(port || 6379));
  return { what: 'Redis', url, missing: up ? undefined : `no Redis answers at ${hostname}:${port || 6379} (start one, or set TEST_REDIS_URL)` };
}

/** Chromium at CHROMIUM_PATH (default /usr/bin/chromium, Debian's package). */
export function needChromium(): Need & { path: string } {
  const path = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  return { what: 'Chromium', path, missing: existsSync(path) ? undefined : `no Chromium at ${path} (install it, or set CHROMIUM_PATH)` };
}

/** Programs on PATH, e.g. curl and jq. */
export function needCommands(...names: string[]): Need {
  const absent = names.filter((name) => spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status !== 0);
  return { what: names.join(', '), missing: absent.length ? `${absent.join(', ')} not on PATH` : undefined };
}

const told = new WeakSet<Need>();

function decide(need: Need): { skip: boolean; title: (name: string) => string } {
  if (!need.missing) return { skip: false, title: (name) => name };
  const tell = (line: string) => {
    if (!told.has(need)) console.warn(`[tests] ${line}`);
    told.add(need);
  };
  if (STRICT) {
    tell(`${need.what} is missing (${need.missing}) and KEYFORGE_TEST_STRICT=1: the tests that need it fail`);
    return { skip: false, title: (name) => name };
  }
  tell(`skipping the tests that need ${need.what}: ${need.missing}`);
  return { skip: true, title: (name) => `${name} [skipped: ${need.missing}]` };
}

const missingError = (need: Need) => new Error(`${need.what} is missing: ${need.missing} (KEYFORGE_TEST_STRICT=1: nothing may be skipped)`);

/** `it`, or `it.skip` with the reason when the need is missing (under KEYFORGE_TEST_STRICT=1: a failing test). */
export function itWith(need: Need): (name: string, fn: () => unknown, timeout?: number) => void {
  const { skip, title } = decide(need);
  return (name, fn, timeout) => {
    if (skip) it.skip(title(name), fn, timeout);
    else
      it(
        title(name),
        () => {
          if (need.missing) throw missingError(need);
          return fn();
        },
        timeout,
      );
  };
}

/** `describe`, or `describe.skip` with the reason when the need is missing (under KEYFORGE_TEST_STRICT=1: every test fails). */
export function describeWith(need: Need): (name: string, fn: () => void) => void {
  const { skip, title } = decide(need);
  return (name, fn) => {
    if (skip) describe.skip(title(name), fn);
    else
      describe(title(name), () => {
        if (need.missing)
          beforeAll(() => {
            throw missingError(need);
          });
        fn();
      });
  };
}

/** Whether the suites needing it run (for setup code outside the tests, e.g. a file-level beforeAll). */
export const runs = (need: Need) => !need.missing || STRICT;
