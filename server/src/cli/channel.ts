import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import type { ServerSecrets } from '../crypto/secrets.js';
import { AppError } from '../domain/errors.js';
import type { Logger } from '../logger.js';
import type { AppDeps } from '../deps.js';
import { NO_META } from '../services/auth/actor.js';
import type { Opts } from './command.js';
import { CLI_ACTOR, commands } from './commands.js';

// The operator CLI while the server runs on the embedded database (docs/operate/cli.md). PGlite has one owner:
// the server holds the data directory, so the CLI hands its command to the server over a unix socket in DATA_DIR
// (mode 0600: only the data directory's owner can connect) and proves it read the server secret there with a token
// derived from it. The server runs the same command handler against its own database and answers with the result.

export const CLI_SOCKET_NAME = 'cli.sock';
export const cliSocketPath = (dataDir: string) => path.resolve(dataDir, CLI_SOCKET_NAME);
/** Proof that the caller can read the server secret (never the secret itself). */
export const cliChannelToken = (secrets: ServerSecrets) => secrets.digest('cli-channel-v1');

const MAX_REQUEST_BYTES = 1_000_000;

type Request = { token: string; command: string; opts: Opts };
type Answer = { result: unknown } | { error: { code: string; message: string } };

/** Reads one newline-terminated JSON message (bounded). */
function readMessage(socket: Socket): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      if (buffer.length > MAX_REQUEST_BYTES) return reject(new AppError('InvalidRequest', 'CLI request too large'));
      const end = buffer.indexOf('\n');
      if (end >= 0) {
        try {
          resolve(JSON.parse(buffer.slice(0, end)));
        } catch {
          reject(new AppError('InvalidRequest', 'malformed CLI request'));
        }
      }
    });
    socket.on('error', reject);
    socket.on('end', () => reject(new AppError('InvalidRequest', 'CLI request ended early')));
  });
}

const sameToken = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * Serves CLI commands on `<dataDir>/cli.sock` (the caller holds the embedded database's lock, so a socket file left by
 * a dead server is stale and replaced). `run` executes one command; its AppErrors go back to the CLI as they are.
 */
export async function serveCliChannel(
  options: { dataDir: string; secrets: ServerSecrets; logger: Logger },
  run: (command: string, opts: Opts) => Promise<unknown>,
): Promise<{ path: string; close(): Promise<void> }> {
  const socketPath = cliSocketPath(options.dataDir);
  if (existsSync(socketPath)) unlinkSync(socketPath);
  const token = cliChannelToken(options.secrets);
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    void (async (): Promise<Answer> => {
      const request = (await readMessage(socket)) as Partial<Request>;
      if (typeof request?.token !== 'string' || !sameToken(request.token, token)) throw new AppError('Unauthorized', 'the CLI could not prove it read the server secret in DATA_DIR');
      if (typeof request.command !== 'string' || typeof request.opts !== 'object' || request.opts === null) throw new AppError('InvalidRequest', 'malformed CLI request');
      options.logger.info({ command: request.command }, 'operator CLI command through the local channel');
      return { result: await run(request.command, request.opts) };
    })()
      .catch((error: unknown): Answer => {
        if (error instanceof AppError) return { error: { code: error.code, message: error.message } };
        options.logger.error({ err: error }, 'operator CLI command failed');
        return { error: { code: 'InternalError', message: error instanceof Error ? error.message : String(error) } };
      })
      .then((answer) => socket.end(`${JSON.stringify(answer)}\n`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  chmodSync(socketPath, 0o600);
  server.on('error', (error) => options.logger.error({ err: error }, 'operator CLI channel failed'));
  return {
    path: socketPath,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Sends a command to the running server. Resolves with its result; a server error is thrown as an AppError.
 * Null when no server listens on the socket (none running, or a stale file): the CLI then opens the database itself.
 */
export function callCliChannel(socketPath: string, secrets: ServerSecrets, command: string, opts: Opts): Promise<{ result: unknown } | null> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let connected = false;
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify({ token: cliChannelToken(secrets), command, opts } satisfies Request)}\n`);
    });
    socket.on('data', (chunk: string) => (buffer += chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (!connected && (error.code === 'ECONNREFUSED' || error.code === 'ENOENT')) resolve(null);
      else reject(new AppError('ServiceUnavailable', `the running server's CLI channel failed: ${error.message}`));
    });
    socket.on('end', () => {
      try {
        const answer = JSON.parse(buffer) as Answer;
        if ('error' in answer) reject(new AppError(answer.error.code as AppError['code'], answer.error.message));
        else resolve(answer);
      } catch {
        reject(new AppError('ServiceUnavailable', 'the running server gave no answer on its CLI channel'));
      }
    });
  });
}

/**
 * In the server: serves the CLI channel when it runs on the embedded database (its only owner). A channel that cannot
 * start (a DATA_DIR path too long for a socket, say) is logged, and the server runs on without it.
 */
export async function startCliChannel(deps: Pick<AppDeps, 'config' | 'db' | 'secrets' | 'logger'>) {
  if (deps.db.kind !== 'pglite') return null;
  const run = (name: string, opts: Opts) => {
    const command = commands[name];
    if (!command || command.offline) throw new AppError('InvalidRequest', `${name} does not run through the server`);
    return command.run({ db: deps.db, secrets: deps.secrets, now: new Date(), actor: CLI_ACTOR, meta: NO_META }, opts);
  };
  try {
    return await serveCliChannel({ dataDir: deps.config.dataDir, secrets: deps.secrets, logger: deps.logger }, run);
  } catch (error) {
    deps.logger.warn({ err: (error as Error).message }, 'the operator CLI channel did not start: stop the server to use the CLI on the embedded database');
    return null;
  }
}
