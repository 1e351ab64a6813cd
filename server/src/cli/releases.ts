import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { AppError, type ErrorCode, ERROR_STATUS } from '../domain/errors.js';
import { list, need, str, type CliCommand, type Opts } from './command.js';

/**
 * The release commands a vendor's build pipeline runs (docs/operate/cli.md "Release commands"): remote commands,
 * against a running server over HTTP (`--url`, or KEYFORGE_URL), authenticated by a CompanyAdmin API key read from
 * the environment variable KEYFORGE_API_KEY — never an argument, so it is in no shell history, process list or CI log.
 * They open no database and read no DATA_DIR.
 */

const RELEASE_FIELDS = 'id productId version channel status notes requiredFeatures requiresMaintenance publishedAt artifacts { id filename platform arch filetype size sha256 }';

function remote(opts: Opts): { url: string; apiKey: string } {
  const url = (str(opts, 'url') ?? process.env.KEYFORGE_URL ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s/]+/.test(url)) throw new AppError('InvalidRequest', '--url (or KEYFORGE_URL) must be the server\'s address, e.g. https://licensing.example.com');
  const apiKey = process.env.KEYFORGE_API_KEY?.trim();
  if (!apiKey) throw new AppError('InvalidRequest', 'set KEYFORGE_API_KEY to a CompanyAdmin API key (the key is never taken as an argument)');
  return { url, apiKey };
}

/** A server error answer as the CLI's error (its code and message). */
function serverError(status: number, body: unknown): AppError {
  const error = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
  const code = error?.code && error.code in ERROR_STATUS ? (error.code as ErrorCode) : 'InternalError';
  return new AppError(code, error?.message ?? `the server answered HTTP ${status}`);
}

async function graphql(opts: Opts, query: string, variables: object): Promise<any> {
  const { url, apiKey } = remote(opts);
  const response = await fetch(`${url}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json().catch(() => undefined)) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } | undefined;
  if (body?.errors?.length) {
    const [first] = body.errors;
    const code = first.extensions?.code && first.extensions.code in ERROR_STATUS ? (first.extensions.code as ErrorCode) : 'InternalError';
    throw new AppError(code, first.message);
  }
  if (!response.ok || !body?.data) throw serverError(response.status, body);
  return body.data;
}

/** SHA-256 of a file, read as a stream. */
async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** Streams `file` as the body of a PUT (Content-Length known, bounded memory) and answers the JSON reply. */
function putFile(target: URL, apiKey: string, file: string, size: number): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'application/octet-stream', 'content-length': String(size) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    pipeline(createReadStream(file), req).catch(reject);
  });
}

const releaseIdOf = (opts: Opts) => need(opts, 'release');

export const releaseCommands: Record<string, CliCommand> = {
  'release:create': {
    usage: 'release:create --url <URL> --product <ID> --version <SEMVER> [--channel stable|rc|beta|alpha|dev] [--notes <text> | --notes-file <file>] [--features a,b] [--requires-maintenance]   (remote: KEYFORGE_API_KEY)',
    options: ['--url <url>', '--product <id>', '--version <semver>', '--channel <channel>', '--notes <text>', '--notes-file <file>', '--features <list>', '--requires-maintenance'],
    remote: true,
    async run(_ctx, opts) {
      const notesFile = str(opts, 'notesFile');
      const channel = str(opts, 'channel');
      const input = {
        productId: need(opts, 'product'),
        version: need(opts, 'version'),
        ...(channel && { channel: channel.toUpperCase() }),
        notes: notesFile ? readFileSync(notesFile, 'utf8') : str(opts, 'notes'),
        requiredFeatures: list(opts.features),
        requiresMaintenance: opts.requiresMaintenance === true ? true : undefined,
      };
      const data = await graphql(opts, `mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input });
      return data.createRelease.release;
    },
  },
  'release:upload': {
    usage: 'release:upload --url <URL> --release <ID> --file <path> --platform <win32|darwin|linux|…> --arch <x64|arm64|…> [--filename <name>] [--filetype <type>]   (remote: KEYFORGE_API_KEY; the SHA-256 is checked on arrival)',
    options: ['--url <url>', '--release <id>', '--file <path>', '--platform <platform>', '--arch <arch>', '--filename <name>', '--filetype <type>'],
    remote: true,
    async run(_ctx, opts) {
      const { url, apiKey } = remote(opts);
      const file = need(opts, 'file');
      const stat = statSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile()) throw new AppError('InvalidRequest', `--file ${file} is not a file`);
      const sha256 = await fileSha256(file);
      const query = new URLSearchParams({ filename: str(opts, 'filename') ?? path.basename(file), platform: need(opts, 'platform'), arch: need(opts, 'arch'), sha256 });
      const filetype = str(opts, 'filetype');
      if (filetype) query.set('filetype', filetype);
      const target = new URL(`${url}/api/releases/${encodeURIComponent(releaseIdOf(opts))}/artifacts?${query}`);
      const { status, body } = await putFile(target, apiKey, file, stat.size);
      if (status !== 201) throw serverError(status, body);
      return body;
    },
  },
  'release:publish': {
    usage: 'release:publish --url <URL> --release <ID>   (remote: KEYFORGE_API_KEY)',
    options: ['--url <url>', '--release <id>'],
    remote: true,
    async run(_ctx, opts) {
      const data = await graphql(opts, `mutation($input: PublishReleaseInput!) { publishRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input: { id: releaseIdOf(opts) } });
      return data.publishRelease.release;
    },
  },
  'release:yank': {
    usage: 'release:yank --url <URL> --release <ID>   (remote: KEYFORGE_API_KEY)',
    options: ['--url <url>', '--release <id>'],
    remote: true,
    async run(_ctx, opts) {
      const data = await graphql(opts, `mutation($input: YankReleaseInput!) { yankRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input: { id: releaseIdOf(opts) } });
      return data.yankRelease.release;
    },
  },
};
