import { requireAdmin, requireInstallationOperator, type ServiceActor } from './auth/actor.js';
import type { ServiceContext } from './context.js';

/**
 * What an operator watches (docs/operate/observability.md): outbox backlogs, the audit chain's anchors, resumable runs and
 * the signing key. One reading serves both the Prometheus collectors (the installation, as the system actor) and the
 * console's System page (a company's members: their company only), so both show the same numbers.
 */
export interface JobLastRun {
  job: string;
  lastStartedAt: Date;
  lastFinishedAt: Date | null;
  lastFailedAt: Date | null;
  lastFailReason: string | null;
  outcome: 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  /** From start to success or failure; null while running. */
  durationSeconds: number | null;
}

export interface SystemStatus {
  /** null: the whole installation (the operator); else the company the numbers are scoped to. */
  tenantId: string | null;
  emailsPending: number;
  oldestPendingEmailAt: Date | null;
  webhookDeliveriesPending: number;
  oldestPendingWebhookAt: Date | null;
  webhookEndpointsDisabled: number;
  lastAuditCheckpointAt: Date | null;
  /** The newest full verification of each company's activity log: when the last ran, and how many are broken. */
  lastAuditVerificationAt: Date | null;
  auditVerificationsBroken: number;
  /** Companies whose log was verified at least once (0: no verdict yet). */
  auditVerifiedCompanies: number;
  /** Every newest verification holds; null before the first (what keyforge_audit_verification_ok reports). */
  auditVerificationHolds: boolean | null;
  /** The latest run of each job, whoever started it (`job_last_runs`: installation-wide schedules). */
  jobs: JobLastRun[];
  /** Unfinished per-tenant runs (expiry, digest): tenants not done yet and tenants failed, per job. */
  runs: { job: string; period: string; tenantsPending: number; tenantsFailed: number }[];
  /** Creation time of the active signing key (installation-wide: every company's tokens use it). */
  signingKeyCreatedAt: Date | null;
}

type StatusCtx = Pick<ServiceContext, 'db'> & { actor: ServiceActor | null };

interface Row {
  emails_pending: number;
  oldest_email: Date | null;
  webhooks_pending: number;
  oldest_webhook: Date | null;
  endpoints_disabled: number;
  last_checkpoint: Date | null;
  last_verification: Date | null;
  verifications_broken: number;
  verified_companies: number;
  signing_key_created: Date | null;
}

// $1: the tenant, or null for the installation. Each count rides an index (status, next_attempt_at) or a small table;
// the audit figures read each company's newest checkpoint and verdict through (tenant_id, seq) and
// (tenant_id, verified_at): the cost grows with the companies, not with the history those tables keep forever.
const STATUS_SQL = `
  WITH scope AS (SELECT id FROM tenants WHERE $1::uuid IS NULL OR id = $1),
  newest AS (
    SELECT c.created_at AS checkpoint_at, v.valid, v.verified_at
      FROM scope
      LEFT JOIN LATERAL (SELECT created_at FROM audit_checkpoints WHERE tenant_id = scope.id ORDER BY seq DESC LIMIT 1) c ON true
      LEFT JOIN LATERAL (SELECT valid, verified_at FROM audit_verdicts WHERE tenant_id = scope.id ORDER BY verified_at DESC LIMIT 1) v ON true)
  SELECT
    (SELECT count(*)::int FROM email_outbox WHERE status = 'pending' AND ($1::uuid IS NULL OR tenant_id = $1)) AS emails_pending,
    (SELECT min(created_at) FROM email_outbox WHERE status = 'pending' AND ($1::uuid IS NULL OR tenant_id = $1)) AS oldest_email,
    (SELECT count(*)::int FROM webhook_deliveries WHERE status = 'pending' AND ($1::uuid IS NULL OR tenant_id = $1)) AS webhooks_pending,
    (SELECT min(created_at) FROM webhook_deliveries WHERE status = 'pending' AND ($1::uuid IS NULL OR tenant_id = $1)) AS oldest_webhook,
    (SELECT count(*)::int FROM webhook_endpoints WHERE NOT enabled AND ($1::uuid IS NULL OR tenant_id = $1)) AS endpoints_disabled,
    (SELECT max(checkpoint_at) FROM newest) AS last_checkpoint,
    (SELECT max(verified_at) FROM newest) AS last_verification,
    (SELECT (count(*) FILTER (WHERE NOT valid))::int FROM newest) AS verifications_broken,
    (SELECT count(verified_at)::int FROM newest) AS verified_companies,
    -- The key that signs now, by the rule of loadTokenSigner (services/signing/signing-keys.ts).
    (SELECT created_at FROM signing_keys WHERE retired_at IS NULL AND signs_from <= now() ORDER BY signs_from DESC LIMIT 1) AS signing_key_created`;

// An unfinished run's tenants: those without a row yet, or failed, are not done.
const RUNS_SQL = `
  SELECT r.job, r.period,
         ((SELECT count(*) FROM tenants WHERE $1::uuid IS NULL OR id = $1)
           - count(t.tenant_id) FILTER (WHERE t.status = 'done'))::int AS tenants_pending,
         (count(t.tenant_id) FILTER (WHERE t.status = 'failed'))::int AS tenants_failed
    FROM job_runs r
    LEFT JOIN job_run_tenants t ON t.job = r.job AND t.period = r.period AND ($1::uuid IS NULL OR t.tenant_id = $1)
   WHERE r.finished_at IS NULL
   GROUP BY r.job, r.period
   ORDER BY r.job, r.period`;

/** The installation's status for the operator (a system actor without a tenant), else the company's, for its admins. */
export async function systemStatus(ctx: StatusCtx): Promise<SystemStatus> {
  const tenantId = ctx.actor?.kind === 'system' && ctx.actor.tenantId === null ? null : requireAdmin(ctx).tenantId;
  return readStatus(ctx.db, tenantId);
}

async function readStatus(db: StatusCtx['db'], tenantId: string | null): Promise<SystemStatus> {
  const [[row], runs, jobs] = await Promise.all([
    db.sql.query<Row>(STATUS_SQL, [tenantId]),
    db.sql.query<{ job: string; period: string; tenants_pending: number; tenants_failed: number }>(RUNS_SQL, [tenantId]),
    db.sql.query<{ job: string; started_at: Date; finished_at: Date | null; failed_at: Date | null; fail_reason: string | null }>('SELECT job, started_at, finished_at, failed_at, fail_reason FROM job_last_runs ORDER BY job', []),
  ]);
  return {
    tenantId,
    emailsPending: row.emails_pending,
    oldestPendingEmailAt: date(row.oldest_email),
    webhookDeliveriesPending: row.webhooks_pending,
    oldestPendingWebhookAt: date(row.oldest_webhook),
    webhookEndpointsDisabled: row.endpoints_disabled,
    lastAuditCheckpointAt: date(row.last_checkpoint),
    lastAuditVerificationAt: date(row.last_verification),
    auditVerificationsBroken: row.verifications_broken,
    auditVerifiedCompanies: row.verified_companies,
    auditVerificationHolds: row.verified_companies ? row.verifications_broken === 0 : null,
    jobs: jobs.map((job) => lastRun(job.job, new Date(job.started_at), date(job.finished_at), date(job.failed_at), job.fail_reason)),
    runs: runs.map((run) => ({ job: run.job, period: run.period, tenantsPending: Math.max(0, run.tenants_pending), tenantsFailed: run.tenants_failed })),
    signingKeyCreatedAt: date(row.signing_key_created),
  };
}

const date = (value: Date | string | null) => (value === null ? null : new Date(value));

function lastRun(job: string, lastStartedAt: Date, lastFinishedAt: Date | null, lastFailedAt: Date | null, lastFailReason: string | null): JobLastRun {
  const end = lastFailedAt ?? lastFinishedAt;
  const outcome = lastFailedAt ? 'FAILED' : lastFinishedAt ? 'SUCCEEDED' : 'RUNNING';
  return { job, lastStartedAt, lastFinishedAt, lastFailedAt, lastFailReason, outcome, durationSeconds: end ? (end.getTime() - lastStartedAt.getTime()) / 1000 : null };
}

/** Entries a checkpoint has not covered for this long mean the checkpoint job (every 15 minutes) is not keeping up. */
const UNANCHORED_ENTRIES_STALE_MS = 60 * 60_000;

/**
 * The installation as its operator sees it: the numbers the metrics export (the same reading), plus how many
 * companies there are and which need the operator — by key prefix only (what `pnpm cli audit:check --tenant` takes),
 * never their data.
 */
export interface InstallationStatus extends SystemStatus {
  companies: number;
  /** Key prefixes of the companies whose newest full verification is broken (at most 50, alphabetical). */
  auditBrokenCompanies: string[];
  /** Companies with activity-log entries no checkpoint has covered for over UNANCHORED_ENTRIES_STALE_MS. */
  companiesWithUnanchoredEntries: number;
}

// Per company: the newest verdict and the oldest entry after the newest checkpoint, both through (tenant_id, seq) /
// (tenant_id, verified_at) indexes. $1: the time before which an uncovered entry is late.
const COMPANIES_SQL = `
  WITH company AS (
    SELECT t.key_prefix, v.valid,
           (SELECT e.created_at FROM audit_log e WHERE e.tenant_id = t.id AND e.seq > coalesce(c.seq, 0) ORDER BY e.seq LIMIT 1) AS oldest_unanchored
      FROM tenants t
      LEFT JOIN LATERAL (SELECT seq FROM audit_checkpoints WHERE tenant_id = t.id ORDER BY seq DESC LIMIT 1) c ON true
      LEFT JOIN LATERAL (SELECT valid FROM audit_verdicts WHERE tenant_id = t.id ORDER BY verified_at DESC LIMIT 1) v ON true)
  SELECT count(*)::int AS companies,
         (count(*) FILTER (WHERE oldest_unanchored < $1))::int AS unanchored,
         (array_agg(key_prefix ORDER BY key_prefix) FILTER (WHERE NOT valid))[1:50] AS broken
    FROM company`;

/** The installation's System page: for installation operators only (OPERATOR_EMAILS, or the system actor). */
export async function installationStatus(ctx: StatusCtx & { now: Date; operatorEmails: readonly string[] }): Promise<InstallationStatus> {
  requireInstallationOperator(ctx, ctx.operatorEmails);
  const [status, [companies]] = await Promise.all([
    readStatus(ctx.db, null),
    ctx.db.sql.query<{ companies: number; unanchored: number; broken: string[] | null }>(COMPANIES_SQL, [new Date(ctx.now.getTime() - UNANCHORED_ENTRIES_STALE_MS)]),
  ]);
  return { ...status, companies: companies.companies, auditBrokenCompanies: companies.broken ?? [], companiesWithUnanchoredEntries: companies.unanchored };
}

/**
 * OPERATOR_EMAILS entries no account has yet: whoever later gets an account under one (an invitation from any
 * company) becomes an operator, so the server warns about them at start (docs/operate/configuration.md).
 */
export async function operatorEmailsWithoutAccount(db: StatusCtx['db'], operatorEmails: readonly string[]): Promise<string[]> {
  if (operatorEmails.length === 0) return [];
  const rows = await db.sql.query<{ email: string }>('SELECT email FROM users WHERE email = ANY($1::text[])', [operatorEmails]);
  const taken = new Set(rows.map((row) => row.email));
  return operatorEmails.filter((email) => !taken.has(email));
}
