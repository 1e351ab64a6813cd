import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { armTripwire, tripwireVerdict } from './support/fixed-port-tripwire.js';
import { adminUrl } from './support/pg.js';

// The test harness reaches the run's own database, wherever it is (docs/development.md › "What `pnpm test` needs"):
// a test that dials PostgreSQL's default port passes on a machine that runs PostgreSQL there and fails on a fresh one.

const root = path.resolve(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'fixtures' ? [] : sources(full);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [full] : [];
  });
}

/** Where the default address may be named: the fallback when nothing else is set, and the tripwire that guards it. */
const MAY_NAME_THE_DEFAULT = new Set(['test/support/pg.ts', 'test/support/global-setup.ts', 'test/support/fixed-port-tripwire.ts', 'test/harness-database.test.ts']);

/** A connection to a literal port (`connect(5432, …)`, `{ port: 5432 }`) or to PostgreSQL's default address by URL. */
const FIXED_DATABASE_ADDRESS = [/\bconnect\(\s*\d{2,5}\b/, /\bport:\s*5432\b/, /(127\.0\.0\.1|localhost):5432\b/];

describe('the run\'s database', () => {
  it('no test or support file connects to a fixed port or to the default database address', () => {
    const offenders: string[] = [];
    for (const file of sources(path.join(root, 'test'))) {
      const relative = path.relative(root, file);
      if (MAY_NAME_THE_DEFAULT.has(relative)) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, index) => {
          if (FIXED_DATABASE_ADDRESS.some((pattern) => pattern.test(line))) offenders.push(`${relative}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(offenders).toEqual([]);
  });

  it('the scan sees the forms it forbids', () => {
    for (const line of ["const upstream = net.connect(5432, '127.0.0.1');", 'new pg.Client({ host: h, port: 5432 })', "'postgres://postgres@127.0.0.1:5432/postgres'"]) {
      expect(FIXED_DATABASE_ADDRESS.some((pattern) => pattern.test(line)), line).toBe(true);
    }
    for (const line of ['net.connect(Number(database.port || 5432), database.hostname);', 'const url = new URL(adminUrl());']) {
      expect(FIXED_DATABASE_ADDRESS.some((pattern) => pattern.test(line)), line).toBe(false);
    }
  });

  it('a connection to the tripwire is counted and named in the verdict', async () => {
    const tripwire = (await armTripwire(0))!;
    try {
      expect(tripwireVerdict(tripwire)).toBeUndefined();
      const closed = await new Promise<boolean>((resolve) => {
        const socket = net.connect(tripwire.port, '127.0.0.1');
        socket.on('error', () => resolve(true)).on('close', () => resolve(true));
      });
      expect(closed).toBe(true);
      expect(tripwire.hits()).toBe(1);
      expect(tripwireVerdict(tripwire)).toContain(`127.0.0.1:${tripwire.port}, which is not this run's database`);
      // A port something already listens on cannot be armed (nothing would be proven there).
      expect(await armTripwire(tripwire.port)).toBeUndefined();
    } finally {
      await tripwire.close();
    }
  });

  it('when the run\'s database is not on 5432, the tripwire guards 5432 (always so in CI, whose tests run with only loopback)', () => {
    const port = new URL(adminUrl()).port;
    if (process.env.KEYFORGE_CI_ISOLATED === '1') expect(port).not.toBe('5432');
    if (port && port !== '5432') expect(inject('fixedPortTripwire')).toBe(5432);
    else expect(inject('fixedPortTripwire')).toBe(0);
  });
});
