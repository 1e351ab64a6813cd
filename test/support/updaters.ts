import { generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const require = createRequire(import.meta.url);

/**
 * electron-updater's own code, loaded without Electron: its generic provider (which fetches `latest*.yml`, parses it
 * with js-yaml and resolves the file URLs) and builder-util-runtime's HttpExecutor (the request, redirect and
 * download-with-sha512-check logic electron-updater runs in the app). Only the socket layer is Node's http here, where
 * the app uses Electron's net module.
 */
const { GenericProvider } = require('electron-updater/out/providers/GenericProvider.js') as {
  GenericProvider: new (configuration: { provider: 'generic'; url: string }, updater: unknown, runtimeOptions: unknown) => ElectronProvider;
};
const runtime = require('builder-util-runtime') as {
  HttpExecutor: new () => object;
  CancellationToken: new () => object;
  configureRequestUrl(url: URL, options: object): void;
  configureRequestOptions(options: object): object;
};

export interface ElectronUpdateInfo {
  version: string;
  files: { url: string; sha512: string; size: number }[];
  path: string;
  sha512: string;
  releaseDate: string;
  releaseNotes?: string;
}
interface ElectronProvider {
  setRequestHeaders(headers: Record<string, string>): void;
  getLatestVersion(): Promise<ElectronUpdateInfo>;
  resolveFiles(info: ElectronUpdateInfo): { url: URL; info: { url: string; sha512: string; size: number } }[];
}

class NodeHttpExecutor extends (runtime.HttpExecutor as unknown as new () => {
  doDownload(requestOptions: object, options: object, redirectCount: number): void;
}) {
  /** Requests seen (host, path, whether they carried Authorization): what reached which server. */
  readonly seen: { host: string; path: string; authorization: boolean }[] = [];

  /** `hosts` maps a host name to `127.0.0.1:port`, as a hosts file would (the test server's PUBLIC_URL host). */
  constructor(private readonly hosts: Record<string, string> = {}) {
    super();
  }

  createRequest(options: RequestOptions & { headers?: Record<string, string> }, callback: (response: IncomingMessage) => void): ClientRequest {
    const authorization = Object.keys(options.headers ?? {}).some((name) => name.toLowerCase() === 'authorization');
    this.seen.push({ host: `${options.hostname}${options.port ? `:${options.port}` : ''}`, path: String(options.path), authorization });
    const mapped = options.hostname ? this.hosts[options.hostname] : undefined;
    if (!mapped) return httpRequest(options, callback);
    const [hostname, port] = mapped.split(':');
    return httpRequest({ ...options, hostname, port: Number(port), headers: { ...options.headers, host: options.hostname! } }, callback);
  }

  /** ElectronHttpExecutor.download, over Node's http: follows redirects (dropping Authorization on another origin) and checks `sha512`. */
  download(url: URL, destination: string, options: { headers: Record<string, string>; sha512: string; cancellationToken: { createPromise<T>(fn: (resolve: (v: T) => void, reject: (e: Error) => void, onCancel: unknown) => void): Promise<T> } }): Promise<string> {
    return options.cancellationToken.createPromise((resolve, reject, onCancel) => {
      const requestOptions = { headers: options.headers, redirect: 'manual' };
      runtime.configureRequestUrl(url, requestOptions);
      runtime.configureRequestOptions(requestOptions);
      this.doDownload(requestOptions, { destination, options, onCancel, callback: (error: Error | null) => (error ? reject(error) : resolve(destination)), responseHandler: null }, 0);
    });
  }
}

/** electron-updater's generic provider for `platform`, reading the feed at `feedUrl` with `headers` (the app's requestHeaders). */
export function electronUpdater(feedUrl: string, platform: 'win32' | 'darwin' | 'linux', headers: Record<string, string>, hosts: Record<string, string> = {}) {
  const executor = new NodeHttpExecutor(hosts);
  const provider = new GenericProvider({ provider: 'generic', url: feedUrl }, { channel: null, isAddNoCacheQuery: false }, { platform, executor, isUseMultipleRangeRequest: false });
  provider.setRequestHeaders(headers);
  return {
    provider,
    seen: executor.seen,
    /** Downloads a resolved file as electron-updater does (redirects followed, the sha512 checked); rejects on a mismatch. */
    download: (file: { url: URL; info: { sha512: string } }, destination: string) =>
      executor.download(file.url, destination, { headers, sha512: file.info.sha512, cancellationToken: new runtime.CancellationToken() as never }),
  };
}

/**
 * The 200 answer of a Tauri dynamic update server, as Tauri's updater documents it: `version` (semver, optionally
 * `v`-prefixed), `url` and `signature` required; `notes` a string; `pub_date` RFC 3339.
 */
const TAURI_UPDATE_SCHEMA = {
  type: 'object',
  required: ['version', 'url', 'signature'],
  properties: {
    version: { type: 'string', pattern: '^v?(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(-[0-9A-Za-z.-]+)?(\\+[0-9A-Za-z.-]+)?$' },
    url: { type: 'string', format: 'uri', pattern: '^https?://' },
    signature: { type: 'string', minLength: 1 },
    notes: { type: 'string' },
    pub_date: { type: 'string', format: 'date-time' },
  },
};
const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
export const validateTauriUpdate = ajv.compile(TAURI_UPDATE_SCHEMA);

/**
 * A Tauri updater key pair and `.sig` files as `tauri signer sign` writes them: base64 of a minisign signature (an
 * untrusted comment, `Ed` + key id + Ed25519 signature of the file, a trusted comment, and the global signature over
 * the signature and the trusted comment). `verify` is the updater's check with the public key built into the app.
 */
export function tauriSigner() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const keyId = randomBytes(8);
  const signFile = (bytes: Uint8Array, file = 'app.tar.gz') => {
    const signature = sign(null, bytes, privateKey);
    const trusted = `timestamp:${Math.floor(Date.now() / 1000)}\tfile:${file}`;
    const global = sign(null, Buffer.concat([signature, Buffer.from(trusted)]), privateKey);
    const text = [`untrusted comment: signature from tauri secret key`, Buffer.concat([Buffer.from('Ed'), keyId, signature]).toString('base64'), `trusted comment: ${trusted}`, global.toString('base64'), ''].join('\n');
    return Buffer.from(text).toString('base64');
  };
  return { signFile, verify: (sigContent: string, bytes: Uint8Array) => verifyTauri(sigContent, bytes, publicKey, keyId) };
}

function verifyTauri(sigContent: string, bytes: Uint8Array, publicKey: KeyObject, keyId: Buffer): boolean {
  const [, line, trusted, global] = Buffer.from(sigContent, 'base64').toString('utf8').split('\n');
  const decoded = Buffer.from(line ?? '', 'base64');
  if (decoded.subarray(0, 2).toString() !== 'Ed' || !decoded.subarray(2, 10).equals(keyId)) return false;
  const signature = decoded.subarray(10);
  const trustedText = (trusted ?? '').replace(/^trusted comment: /, '');
  return verify(null, bytes, publicKey, signature) && verify(null, Buffer.concat([signature, Buffer.from(trustedText)]), publicKey, Buffer.from(global ?? '', 'base64'));
}
