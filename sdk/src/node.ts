/**
 * `@keyforge/client/node` — helpers for Node ≥ 20 and Electron's main process (Bun and Deno load them too,
 * through their `node:` modules): a {@link FileStore}, a device fingerprint ({@link machineFingerprint}) and a
 * release download streamed to a file ({@link downloadArtifactToFile}).
 * Kept apart from `@keyforge/client` so browser bundles never import `node:` modules.
 *
 * @module @keyforge/client/node
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { platform } from 'node:os';
import path from 'node:path';
import type { KeyforgeClient } from './client.js';
import { KeyforgeError } from './errors.js';
import { checkArtifactDigests, fetchArtifact, type Artifact } from './releases.js';
import type { TokenStore } from './stores.js';

/**
 * Keeps the store in one JSON file (created with mode 0600, its folder 0700), written atomically (a temporary
 * file renamed over it), so a crash mid-write never leaves half a file. Writes of one process are serialized;
 * a file that is not valid JSON reads as empty (the next online validation writes it anew).
 */
export class FileStore implements TokenStore {
  /** The file's absolute path. */
  readonly path: string;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(file: string) {
    this.path = path.resolve(file);
  }

  async get(key: string): Promise<string | null> {
    await this.#queue.catch(() => undefined);
    const values = await this.#read();
    return Object.hasOwn(values, key) ? values[key] : null;
  }

  set(key: string, value: string): Promise<void> {
    return this.#update((values) => {
      values[key] = value;
    });
  }

  delete(key: string): Promise<void> {
    return this.#update((values) => {
      delete values[key];
    });
  }

  async #read(): Promise<Record<string, string>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Object.create(null) as Record<string, string>;
      throw error;
    }
    const values = Object.create(null) as Record<string, string>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
        for (const [key, value] of Object.entries(parsed)) if (typeof value === 'string') values[key] = value;
      }
    } catch {
      // Not JSON (edited or corrupted): as if empty.
    }
    return values;
  }

  #update(change: (values: Record<string, string>) => void): Promise<void> {
    const run = this.#queue.catch(() => undefined).then(async () => {
      const values = await this.#read();
      change(values);
      await mkdir(path.dirname(this.path), { recursive: true, mode: 0o700 });
      const temporary = `${this.path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        await writeFile(temporary, JSON.stringify(values, null, 2), { mode: 0o600 });
        await rename(temporary, this.path);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    });
    this.#queue = run;
    return run;
  }
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 5000, windowsHide: true, encoding: 'utf8' }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
}

async function firstLine(files: string[]): Promise<string | null> {
  for (const file of files) {
    try {
      const value = (await readFile(file, 'utf8')).trim();
      if (value) return value;
    } catch {
      // try the next one
    }
  }
  return null;
}

/**
 * The operating system's identifier of this machine, as is (not hashed): `/etc/machine-id` on Linux,
 * `IOPlatformUUID` on macOS, the registry's `MachineGuid` on Windows, `kern.hostuuid` / `/etc/hostid` on the
 * BSDs. Prefer {@link machineFingerprint}, which never sends this value anywhere.
 *
 * @throws `KeyforgeError` with code `MachineIdUnavailable` when the platform offers none (a minimal container).
 */
export async function machineId(): Promise<string> {
  let id: string | null = null;
  try {
    switch (platform()) {
      case 'linux':
        id = await firstLine(['/etc/machine-id', '/var/lib/dbus/machine-id']);
        break;
      case 'darwin':
        id = /"IOPlatformUUID"\s*=\s*"([^"]+)"/.exec(await run('ioreg', ['-rd1', '-c', 'IOPlatformExpertDevice']))?.[1] ?? null;
        break;
      case 'win32':
        id = /MachineGuid\s+REG_SZ\s+(\S+)/i.exec(await run('reg', ['query', 'HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography', '/v', 'MachineGuid', '/reg:64']))?.[1] ?? null;
        break;
      case 'freebsd':
      case 'openbsd':
      case 'netbsd':
        id = (await run('sysctl', ['-n', 'kern.hostuuid']).catch(() => '')).trim() || (await firstLine(['/etc/hostid']));
        break;
      default:
        id = null;
    }
  } catch {
    id = null;
  }
  if (!id) throw new KeyforgeError('MachineIdUnavailable', `No machine identifier found on ${platform()}: pass your own deviceId (or rely on the installation id).`);
  return id;
}

/**
 * A stable device fingerprint for `deviceId`: the hex SHA-256 of `salt` and {@link machineId}. Pass your
 * product's name as `salt` so two vendors' applications on one machine send unrelated values (no salt, or an empty
 * one: `keyforge`, in every Keyforge SDK).
 *
 * It identifies the operating-system installation, not the hardware: a reinstall changes it, a cloned virtual
 * machine or disk image shares it, and an administrator can change it. Good for "one seat per machine";
 * not tamper-proof hardware binding.
 */
export async function machineFingerprint(options: { salt?: string } = {}): Promise<string> {
  const id = await machineId();
  return createHash('sha256').update(`${options.salt || 'keyforge'}\n${id}`).digest('hex');
}

/**
 * {@link KeyforgeClient.downloadArtifact} into a file, for files too large to hold in memory: the same checks (the
 * signature before any byte is fetched, then the signed size, SHA-256 and SHA-512), but the file is hashed as it
 * streams into a temporary file beside `file` (mode 0600), which is renamed to `file` (replacing it) only once it
 * checks out. Memory use does not grow with the file's size. On any failure the temporary file is deleted and `file`
 * is left as it was. Returns `file`'s absolute path.
 *
 * @throws `VerificationError` `ArtifactIntegrity` when anything does not match; `KeyforgeError`
 *   `FileWriteFailed` when the file cannot be written (a folder that does not exist or is not writable, a full disk:
 *   not retried); the errors of {@link KeyforgeClient.listReleases}.
 */
export async function downloadArtifactToFile(
  client: KeyforgeClient,
  artifact: Artifact,
  file: string,
  options: { licenseKey: string; deviceId?: string; signal?: AbortSignal },
): Promise<string> {
  const destination = path.resolve(file);
  const temporary = path.join(path.dirname(destination), `.keyforge-download-${randomBytes(8).toString('hex')}`);
  // A local failure is the disk's, not the network's: its own code, and never retried.
  const disk = async <T>(doing: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw new KeyforgeError('FileWriteFailed', `The download cannot be written (${doing} ${temporary}): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  // Set in `begin` (a callback), so typed here rather than narrowed to its initial value.
  let handle = undefined as FileHandle | undefined;
  let size = 0;
  let sha256: Hash = createHash('sha256');
  let sha512: Hash = createHash('sha512');
  try {
    const claims = await client[fetchArtifact](artifact, options, {
      begin: async () => {
        handle ??= await disk('creating', () => open(temporary, 'wx', 0o600));
        await disk('emptying', () => handle!.truncate(0));
        size = 0;
        sha256 = createHash('sha256');
        sha512 = createHash('sha512');
      },
      write: async (chunk) => {
        sha256.update(chunk);
        sha512.update(chunk);
        for (let written = 0; written < chunk.length; ) {
          const at = written;
          written += (await disk('writing', () => handle!.write(chunk, at, chunk.length - at, size + at))).bytesWritten;
        }
        size += chunk.length;
      },
    });
    checkArtifactDigests(claims, { size, sha256: sha256.digest('hex'), sha512: sha512.digest('hex') });
    await disk('flushing', () => handle!.sync());
    const complete = handle!;
    handle = undefined;
    await disk('closing', () => complete.close());
    await disk('renaming', () => rename(temporary, destination));
    return destination;
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}
