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
    inputs: ['console/src', 'console/index.html', 'console/vite.config.ts', 'console/postcss.config.cjs', 'console/tsconfig.json', 'console/package.json', 'pnpm-lock.yaml'],
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

const wanted = process.argv.slice(2);
for (const target of targets.filter((candidate) => wanted.length === 0 || wanted.includes(candidate.name))) {
  const stamp = path.join(root, target.output, '.build-fingerprint');
  const current = fingerprint(target.inputs);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === current) {
    process.stdout.write(`${target.name}: up to date (no source changed since the last build)\n`);
    continue;
  }
  process.stdout.write(`${target.name}: building…\n`);
  execFileSync('pnpm', target.build, { cwd: root, stdio: 'inherit' });
  writeFileSync(stamp, current);
}
