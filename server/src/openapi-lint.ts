// `pnpm openapi:lint`: writes the served public OpenAPI document to a temp file and lints it with Redocly's
// recommended rules (redocly.yaml). The document is built by the same createPublicApi the server mounts.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AppDeps } from './deps.js';
import { createPublicApi } from './rest/v1/index.js';

// Only config.publicUrl is read while building the document; no route handler runs.
const deps = { config: { publicUrl: 'https://licensing.vendor.test' } } as unknown as AppDeps;
const response = await createPublicApi(deps).request('/openapi.json');
if (response.status !== 200) throw new Error(`GET /openapi.json answered ${response.status}`);
const dir = mkdtempSync(path.join(tmpdir(), 'kf-openapi-'));
const file = path.join(dir, 'openapi.json');
writeFileSync(file, await response.text());
const root = path.resolve(import.meta.dirname, '../..');
const result = spawnSync('pnpm', ['exec', 'redocly', 'lint', file, '--config', path.join(root, 'redocly.yaml')], { stdio: 'inherit', cwd: root });
rmSync(dir, { recursive: true, force: true });
process.exit(result.status ?? 1);
