// `pnpm start`'s build step: builds the console and the server only when their sources changed since the last
// build (a fingerprint of every input file's path, size and modification time, kept next to the output).
// Arguments name the targets to consider (`console`, `server`); none: both.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
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

/**
 * Builds each wanted target (`console`, `server`; none: both) whose sources changed, one progress line each
 * ("building console… done in 12 s"); the build's own output is shown only when it fails. False when a build failed.
 */
export function buildIfChanged(wanted = [], out = process.stdout) {
  for (const target of targets.filter((candidate) => wanted.length === 0 || wanted.includes(candidate.name))) {
    const stamp = path.join(root, target.output, '.build-fingerprint');
    const current = fingerprint(target.inputs);
    if (existsSync(stamp) && readFileSync(stamp, 'utf8') === current) continue;
    out.write(`building ${target.name}… `);
    const started = Date.now();
    try {
      execFileSync('pnpm', target.build, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    } catch (error) {
      out.write(`failed\n${error.stdout ?? ''}${error.stderr ?? ''}`);
      return false;
    }
    out.write(`done in ${Math.round((Date.now() - started) / 1000)} s\n`);
    writeFileSync(stamp, current);
  }
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(buildIfChanged(process.argv.slice(2)) ? 0 : 1);
}
