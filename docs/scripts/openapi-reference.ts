/**
 * Writes the public API's OpenAPI document, as the server serves it at /api/v1/openapi.json, to
 * docs/public/reference/openapi.json and renders it with Redoc (`redocly build-docs`, a self-contained page) to
 * docs/public/reference/rest-api.html. Both are build outputs, not committed; the REST reference page links them.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppDeps } from '../../server/src/deps.js';
import { publicRoutes } from '../../server/src/rest/v1/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const out = path.join(root, 'docs/public/reference');

// Only config.publicUrl is read while building the document (as in `pnpm openapi:lint`); no service runs.
const deps = { config: { publicUrl: 'https://licenses.example.com' } } as unknown as AppDeps;
const documentRoute = publicRoutes(deps).find((route) => route.definition.path === '/openapi.json')!;
const { body } = await documentRoute.handle({ body: undefined, clientIp: '127.0.0.1', header: () => undefined });
mkdirSync(out, { recursive: true });
const file = path.join(out, 'openapi.json');
writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
const result = spawnSync(
  'pnpm',
  ['exec', 'redocly', 'build-docs', file, '--output', path.join(out, 'rest-api.html'), '--config', path.join(root, 'redocly.yaml'), '--title', 'Keyforge public licensing API', '--inlineBundle'],
  { stdio: 'inherit', cwd: root, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
);
process.exit(result.status ?? 1);
