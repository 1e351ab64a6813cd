import type { Hono } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { requireAdmin } from '../../services/auth/actor.js';
import { importKeygenAccount } from '../../services/keygen-import/import.js';
import { bundleLines, readBundle } from '../../services/keygen-import/source.js';
import { adminServiceContext } from './context.js';

/**
 * docs/integrate/management-api.md "Keygen import (REST)": `POST /api/imports/keygen[?dryRun=true]` takes a Keygen
 * account as one bundle (NDJSON: one saved JSON:API page a line, docs/guide/migrating.md) in the request body, read
 * line by line, and imports it into the caller's company (CompanyAdmin: a session or an API key; the company is the
 * caller's, never the body's). The answer is the importer's report. The body may be as large as the importer
 * reads (MAX_ACCOUNT_BYTES), not the management API's 256 KiB (app.ts).
 */
export function mountImportRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  app.post('/api/imports/keygen', async (c) => {
    const ctx = adminServiceContext(deps, c);
    requireAdmin(ctx); // refused before any of the body is read
    const dryRunParam = c.req.query('dryRun');
    if (dryRunParam !== undefined && dryRunParam !== 'true' && dryRunParam !== 'false') throw new AppError('InvalidRequest', 'dryRun must be true or false.');
    const raw = c.req.raw.body;
    if (!raw) throw new AppError('InvalidRequest', 'Send the bundle (one Keygen page a line) as the request body.');
    const account = await readBundle(bundleLines(raw as unknown as AsyncIterable<Uint8Array>));
    const report = await importKeygenAccount(ctx, account, { dryRun: dryRunParam === 'true' });
    c.header('Cache-Control', 'no-store');
    return c.json({ report });
  });
}
