import { existsSync } from 'node:fs';
import { dataDirWarning, makeFilesPrivate, prepareDataDir } from './data-dir.js';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from './config.js';
import { ServerSecrets, loadServerSecret } from './crypto/secrets.js';
import { openDatabase, type Database } from './db/database.js';
import { AppError } from './domain/errors.js';
import { commands } from './cli/commands.js';
import type { CliCommand, CliContext, Opts } from './cli/command.js';
import { CLI_ACTOR } from './cli/commands.js';
import { NO_META } from './services/auth/actor.js';
import { callCliChannel, cliSocketPath } from './cli/channel.js';

/**
 * Operator CLI: `pnpm cli <command> [--flags] [--json]`, parsed by commander; the commands are in cli/commands.ts.
 * Works on DATABASE_URL and on the embedded database: while the server runs on it, through the server
 * (cli/channel.ts). With --json, prints exactly one JSON object.
 */

/** Options naming files: made absolute here, since through the channel the server process reads or writes them. */
const PATH_OPTIONS = ['out', 'checkpoints', 'file', 'jwks', 'dir'];

/**
 * On the embedded database with the server running, the command runs in the server (its database has one owner).
 * Null when it must run here: PostgreSQL, an offline command, or no server listening in DATA_DIR.
 */
async function viaRunningServer(name: string, command: CliCommand, opts: Opts): Promise<{ result: unknown } | null> {
  const config = loadConfig();
  const socketPath = cliSocketPath(config.dataDir);
  if (config.databaseUrl || command.offline || !existsSync(socketPath)) return null;
  const secrets = new ServerSecrets(loadServerSecret(config.serverSecret, config.dataDir).secret);
  const absolute = Object.fromEntries(Object.entries(opts).map(([key, value]) => [key, PATH_OPTIONS.includes(key) && typeof value === 'string' ? path.resolve(value) : value]));
  const answer = await callCliChannel(socketPath, secrets, name, absolute);
  if (answer) process.stderr.write(`database: embedded, ${path.resolve(config.dataDir, 'pglite')} (through the running server)\n`);
  return answer;
}

function usage(): string {
  return `Usage: pnpm cli <command> [options] [--json]
       pnpm cli help [command]

--json (anywhere on the line) prints exactly one JSON object. The database is DATABASE_URL, or the embedded one
in DATA_DIR (default ./data: run the CLI where the server runs, or set DATA_DIR to the server's).

Commands:
${Object.values(commands).map((command) => `  ${command.usage}`).join('\n')}
`;
}

/** Parses one command's options with commander: unknown options, missing values and extra arguments throw. */
function parseOptions(name: string, command: CliCommand, args: string[]): Opts {
  let parsed: Opts | undefined;
  const program = new Command('pnpm cli')
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} })
    .helpOption(false)
    .helpCommand(false);
  const sub = program.command(name).helpOption(false);
  for (const flags of command.options) sub.option(flags);
  if (command.argument) sub.argument(command.argument);
  sub.action(() => {
    const positional = command.argument ? sub.args[0] : undefined;
    const key = command.argument?.replace(/[[\]<>]/g, '');
    parsed = { ...(sub.opts() as Opts), ...(key && positional !== undefined && { [key]: positional }) };
  });
  program.parse([name, ...args], { from: 'user' });
  return parsed!;
}

/**
 * Which database this run uses, told on stderr (stdout stays the result). A missing embedded database is only
 * created by tenant:create — any other command on a DATA_DIR that holds none is most likely run in the wrong
 * directory, and says so instead of answering from a new, empty database.
 */
function announceDatabase(config: { databaseUrl?: string; dataDir: string }, name: string): void {
  if (config.databaseUrl) {
    const url = new URL(config.databaseUrl);
    process.stderr.write(`database: PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}\n`);
    return;
  }
  const dir = path.resolve(config.dataDir, 'pglite');
  if (existsSync(dir)) {
    process.stderr.write(`database: embedded, ${dir}\n`);
    return;
  }
  if (name !== 'tenant:create') {
    throw new AppError('NotFound', `no embedded database in ${dir}: run the CLI in the directory the server runs in, or set DATA_DIR (or DATABASE_URL) to the server's; tenant:create starts a new one`);
  }
  process.stderr.write(`database: embedded, ${dir} (new: there was none in DATA_DIR)\n`);
}

/**
 * The one place that builds the service context of a CLI run (the commands pass it to services unchanged).
 * Changes are attributed to CLI_ACTOR (cli/commands.ts).
 */
async function openContext(name: string, command: CliCommand): Promise<CliContext & { close(): Promise<void> }> {
  const config = loadConfig();
  // Before the secret: a wrong DATA_DIR must not get a new secret file either.
  if (!command.offline) announceDatabase(config, name);
  prepareDataDir(config, (tightened) => process.stderr.write(`warning: ${dataDirWarning(config.dataDir, tightened)}\n`));
  const secrets = new ServerSecrets(loadServerSecret(config.serverSecret, config.dataDir).secret).useForProcess();
  const db: Database | undefined = command.offline ? undefined : await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2, poolMode: config.databasePoolMode });
  return { db: db as Database, secrets, now: new Date(), actor: CLI_ACTOR, meta: NO_META, close: async () => db?.close() };
}

async function main(argv: string[]): Promise<number> {
  makeFilesPrivate(); // before anything is written: the embedded database, a secret, an --out file
  // --json and --help may stand anywhere on the line.
  const json = argv.includes('--json');
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  const [name, ...rest] = argv.filter((arg) => arg !== '--json' && arg !== '--help' && arg !== '-h');
  const fail = (code: string, message: string) => {
    if (json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
    else process.stderr.write(`error: ${message}\n`);
    return 1;
  };
  if (name === 'help' || (wantsHelp && !name)) {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic && !commands[topic]) return fail('InvalidRequest', `unknown command ${topic}; pnpm cli help lists them`);
    const text = topic ? `usage: pnpm cli ${commands[topic].usage}\n` : usage();
    process.stdout.write(json ? `${JSON.stringify({ usage: text })}\n` : text);
    return 0;
  }
  const command = name ? commands[name] : undefined;
  if (!command) {
    if (json) return fail('InvalidRequest', name ? `unknown command ${name}` : 'no command given');
    process.stderr.write(name ? `unknown command ${name}\n\n${usage()}` : usage());
    return 1;
  }
  if (wantsHelp) {
    process.stdout.write(`usage: pnpm cli ${command.usage}\n`);
    return 0;
  }
  let opts: Opts;
  try {
    opts = parseOptions(name!, command, rest);
  } catch (error) {
    const message = error instanceof CommanderError ? error.message.replace(/^error: /, '') : (error as Error).message;
    return fail('InvalidRequest', `${message}\nusage: pnpm cli ${command.usage}`);
  }

  let ctx: Awaited<ReturnType<typeof openContext>> | undefined;
  try {
    if (command.secretInput) opts = await command.secretInput(opts);
    const remote = command.remote ? null : await viaRunningServer(name!, command, opts);
    const result = command.remote
      ? await command.run(undefined as never, opts)
      : remote
        ? remote.result
        : await command.run((ctx = await openContext(name!, command)), opts);
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
    return command.exitCode?.(result) ?? 0;
  } catch (error) {
    if (error instanceof AppError) return fail(error.code, error.message);
    if (error instanceof ConfigError) return fail('InvalidConfiguration', error.message);
    const message = error instanceof Error ? error.message : String(error);
    return fail('InternalError', message);
  } finally {
    await ctx?.close();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
