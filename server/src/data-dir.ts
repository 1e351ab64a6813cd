import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

// DATA_DIR holds the embedded database (its write-ahead log carries every row written, reset tokens included), the
// generated server secret and the CLI socket: private to the server's user, whatever umask it was started with.

/** Files the process creates from here on are its user's alone (0600 files, 0700 directories). */
export function makeFilesPrivate(): void {
  process.umask(0o077);
}

/** An existing DATA_DIR whose permissions could not be tightened (another user owns it). */
export class DataDirError extends Error {}

/**
 * Creates `dataDir` 0700 when missing; when it exists, takes group and other permissions off it and everything under
 * it (symbolic links are left alone). Answers how many paths it changed: more than 0 means others could read them.
 */
export function securePrivateDir(dataDir: string): { tightened: number } {
  const root = path.resolve(dataDir);
  if (!existsSync(root)) {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    chmodSync(root, 0o700);
    return { tightened: 0 };
  }
  let tightened = 0;
  const visit = (at: string) => {
    const stat = lstatSync(at, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink()) return;
    if (stat.mode & 0o077) {
      try {
        chmodSync(at, stat.mode & 0o700);
      } catch (error) {
        throw new DataDirError(`DATA_DIR ${root} is open to other users and ${at} cannot be made private (${(error as NodeJS.ErrnoException).code}): run the server as the directory's owner, or run chmod -R go-rwx ${root}`);
      }
      tightened += 1;
    }
    if (stat.isDirectory()) for (const entry of readdirSync(at)) visit(path.join(at, entry));
  };
  visit(root);
  return { tightened };
}

/**
 * DATA_DIR before anything is written to it: created private when this process will use it (the embedded database,
 * or a server secret generated there), and an existing one tightened, with `warn` told how many paths were open.
 */
export function prepareDataDir(config: { dataDir: string; databaseUrl?: string; serverSecret?: string }, warn: (tightened: number) => void): void {
  if (config.databaseUrl && config.serverSecret && !existsSync(config.dataDir)) return;
  const { tightened } = securePrivateDir(config.dataDir);
  if (tightened > 0) warn(tightened);
}

/** The warning of prepareDataDir, for the log and the CLI. */
export const dataDirWarning = (dataDir: string, tightened: number) =>
  `DATA_DIR ${path.resolve(dataDir)} was open to other users: group and other permissions taken off ${tightened} path(s) (the directory is now 0700, its files 0600)`;
