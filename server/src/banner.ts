import type { Config } from './config.js';

/** What the server tells its operator once it listens: as a banner on a terminal, as one JSON log line otherwise. */
export interface StartupFacts {
  /** The public origin (PUBLIC_URL): what browsers, applications and emails use. */
  url: string;
  /** The address this process accepts connections on (HOST:PORT); behind a proxy it differs from `url`. */
  listening: string;
  /** Where the data is, without credentials. */
  database: string;
  jobStore: string;
  /** `postmark`, or `development` (kept in the outbox, nothing sent). */
  mail: string;
  /** Whether this server runs the scheduled jobs (JOBS_WORKER). */
  jobsHere: boolean;
  metrics: string;
  next: string;
}

export function startupFacts(config: Config, jobs: { store: string; mail: string }, needsSetup: boolean, metricsUrl: string | null, port: number): StartupFacts {
  const database = config.databaseUrl ? `PostgreSQL ${withoutCredentials(config.databaseUrl)}` : `embedded (${config.dataDir}/pglite)`;
  return {
    url: config.publicUrl,
    listening: listenAddress(config.host, port),
    database,
    jobStore: jobs.store,
    mail: jobs.mail,
    jobsHere: config.jobsWorker,
    metrics: metricsUrl ?? (config.metrics?.token ? `${config.publicUrl}/metrics (Authorization: Bearer METRICS_TOKEN)` : 'off (set METRICS_TOKEN or METRICS_PORT)'),
    next: needsSetup ? `Open ${config.publicUrl} to create your company and its first admin.` : `Open ${config.publicUrl} to sign in.`,
  };
}

/** `http://HOST:PORT` as the operator would type it (an IPv6 address in brackets); `port` is the bound one (PORT=0 picks one). */
export function listenAddress(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The one log line that says the server is up: where it listens, and its public URL when that is another address. */
export function listeningMessage(facts: Pick<StartupFacts, 'url' | 'listening'>): string {
  return `license service listening on ${facts.listening}${facts.url === facts.listening ? '' : ` (PUBLIC_URL ${facts.url})`}`;
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
}

/** The human-readable banner (a terminal): what runs where, and what to do next. */
export function startupBanner(facts: StartupFacts): string {
  const mail = facts.mail === 'development' ? 'development outbox: nothing is sent (pnpm cli outbox:list; set POSTMARK_SERVER_TOKEN to send)' : 'Postmark';
  const rows: [string, string][] = [
    ['URL', facts.url],
    ...(facts.listening === facts.url ? [] : [['Listening on', facts.listening] as [string, string]]),
    ['Database', facts.database],
    ['Job store', `${facts.jobStore}${facts.jobsHere ? '' : ' (jobs run in pnpm worker processes: JOBS_WORKER=false)'}`],
    ['Email', mail],
    ['Metrics', facts.metrics],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return ['', '  Keyforge is running.', '', ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`), '', `  Next: ${facts.next}`, '', '  Logs follow as JSON lines (LOG_LEVEL=debug shows every request).', '', ''].join('\n');
}
