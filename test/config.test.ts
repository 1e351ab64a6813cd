import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../server/src/config.js';

describe('configuration', () => {
  it('has documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 4000,
      databaseUrl: undefined,
      dataDir: './data',
      publicUrl: 'http://localhost:4000',
      redisUrl: undefined,
      rateLimitPublicPerMinute: 600,
      rateLimitTenantPerMinute: 6000,
      trustProxy: false,
    });
    expect(loadConfig({ PORT: '8080' }).publicUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PUBLIC_URL: 'https://licenses.example.com/' }).publicUrl).toBe('https://licenses.example.com');
  });

  it('turns the metrics on only with METRICS_TOKEN or METRICS_PORT', () => {
    expect(loadConfig({}).metrics).toBeNull();
    expect(loadConfig({ METRICS_PORT: '', METRICS_TOKEN: '' }).metrics).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: 'a-random-secret-of-32-characters' }).metrics).toEqual({ token: 'a-random-secret-of-32-characters', port: undefined, host: '127.0.0.1' });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metrics).toEqual({ token: undefined, port: 9464, host: '0.0.0.0' });
  });

  const bad: [Record<string, string>, string][] = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ PUBLIC_URL: 'not a url' }, 'PUBLIC_URL'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ RATE_LIMIT_PUBLIC_PER_MINUTE: '0' }, 'RATE_LIMIT_PUBLIC_PER_MINUTE'],
    [{ SERVER_SECRET: 'short' }, 'SERVER_SECRET'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
    [{ METRICS_TOKEN: 'too-short' }, 'METRICS_TOKEN'],
    [{ METRICS_PORT: 'abc' }, 'METRICS_PORT'],
  ];
  for (const [env, variable] of bad) {
    it(`refuses a bad ${variable}, naming it`, () => {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(new RegExp(`${variable}:`));
    });
  }

  it('a bad value stops the real server at boot with a message naming the variable', () => {
    const result = spawnSync('pnpm', ['exec', 'tsx', 'server/src/main.ts'], {
      env: { ...process.env, PORT: 'not-a-port', DATA_DIR: '/nonexistent-never-created' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('PORT');
    expect(result.stderr).not.toMatch(/at .*\(.*\.ts:\d+/);
  });
});
