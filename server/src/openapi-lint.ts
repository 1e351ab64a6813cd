// `pnpm openapi:lint`: writes the served public OpenAPI document to a temp file and lints it with Redocly's
// recommended rules (redocly.yaml). The document is built from the same routes the server serves (rest/v1).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AppDeps } from './deps.js';
import { publicRoutes } from './rest/v1/index.js';

// Only config.publicUrl is read while building the document; no service runs.
const deps = { config: { publicUrl: 'https://licensing.vendor.test' } } as unknown as AppDeps;
const documentRoute = publicRoutes(deps).find((route) => route.definition.path === '/openapi.json')!;
const { body } = await documentRoute.handle({ body: undefined, clientIp: '127.0.0.1', header: () => undefined });
const dir = mkdtempSync(path.join(tmpdir(), 'kf-openapi-'));
const file = path.join(dir, 'openapi.json');
writeFileSync(file, JSON.stringify(body));
const root = path.resolve(import.meta.dirname, '../..');
const result = spawnSync('pnpm', ['exec', 'redocly', 'lint', file, '--config', path.join(root, 'redocly.yaml')], { stdio: 'inherit', cwd: root });
rmSync(dir, { recursive: true, force: true });
process.exit(result.status ?? 1);
