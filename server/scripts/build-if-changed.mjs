// `pnpm start`'s build step: builds the console and the server only when their sources changed since the last
// build (a fingerprint of every input file's path, size and modification time, kept next to the output).
// Arguments name the targets to consider (`console`, `server`); none: both. Concurrent callers (several test files,
// or a test run beside `pnpm start`) build one at a time: the others wait and then find the output current, so no
// build empties an output directory that a running server is serving from.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const targets = [
  {
    name: 'console',
    inputs: ['console/src', 'console/index.html', 'console/portal.html', 'console/vite.config.ts', 'console/postcss.config.cjs', 'console/tsconfig.json', 'console/package.json', 'pnpm-lock.yaml'],
    output: 'console/dist',
    build: ['--filter', './console', 'build'],
  },
  {
    name: 'server',
    inputs: ['server/src', 'server/tsconfig.json', 'server/tsconfig.build.json', 'server/package.json', 'tsconfig.base.json', 'pnpm-lock.yaml'],
    output: 'server/dist',
    build: ['--filter', './server', 'build'],
  },
];

function files(entry) {
  const full = path.join(root, entry);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [entry];
  return readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((dirent) => dirent.isFile())
    .map((dirent) => path.relative(root, path.join(dirent.parentPath ?? dirent.path, dirent.name)));
}

function fingerprint(inputs) {
  const hash = createHash('sha256');
  for (const file of inputs.flatMap(files).sort()) {
    const { size, mtimeMs } = statSync(path.join(root, file));
    hash.update(`${file}\0${size}\0${mtimeMs}\n`);
  }
  return hash.digest('hex');
}

const LOCK_WAIT_MS = 10 * 60_000;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Holds `file` (created exclusively, with this process's pid) while `work` runs; a lock whose holder died is taken over. */
function withLock(file, work) {
  mkdirSync(path.dirname(file), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    let holder;
    let stale;
    try {
      holder = Number(readFileSync(file, 'utf8'));
      // Empty only between its holder creating and writing it, or when that holder died in between.
      stale = holder ? !alive(holder) : Date.now() - statSync(file).mtimeMs > 5_000;
    } catch (error) {
      if (error.code === 'ENOENT') continue; // released meanwhile
      throw error;
    }
    if (stale) {
      rmSync(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another build has held ${file} for ${LOCK_WAIT_MS / 60_000} minutes (pid ${holder})`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250);
  }
  try {
    return work();
  } finally {
    rmSync(file, { force: true });
  }
}

/**
 * Builds each wanted target (`console`, `server`; none: both) whose sources changed, one progress line each
 * ("building console… done in 12 s"); the build's own output is shown only when it fails. False when a build failed.
 */
export function buildIfChanged(wanted = [], out = process.stdout) {
  for (const target of targets.filter((candidate) => wanted.length === 0 || wanted.includes(candidate.name))) {
    const stamp = path.join(root, target.output, '.build-fingerprint');
    const current = () => {
      const print = fingerprint(target.inputs);
      return existsSync(stamp) && readFileSync(stamp, 'utf8') === print ? null : print;
    };
    if (current() === null) continue;
    const built = withLock(path.join(root, 'node_modules', '.cache', 'keyforge', `build-${target.name}.lock`), () => {
      // Checked again under the lock: another caller may have built it while this one waited.
      const print = current();
      if (print === null) return true;
      out.write(`building ${target.name}… `);
      const started = Date.now();
      try {
        execFileSync('pnpm', target.build, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      } catch (error) {
        out.write(`failed\n${error.stdout ?? ''}${error.stderr ?? ''}`);
        return false;
      }
      out.write(`done in ${Math.round((Date.now() - started) / 1000)} s\n`);
      writeFileSync(stamp, print);
      return true;
    });
    if (!built) return false;
  }
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(buildIfChanged(process.argv.slice(2)) ? 0 : 1);
}
