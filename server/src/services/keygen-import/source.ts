import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../domain/errors.js';
import { KEYGEN_TYPES, malformed, parsePage, type KeygenPage, type KeygenResource, type KeygenType } from './documents.js';

// Where a Keygen account's documents come from: a directory of saved pages (any names, any depth up to 3, `.json`),
// a bundle of pages (one JSON document a line: what the console uploads), or Keygen's API itself, followed page by
// page through `links.next`. Every source is bounded before it is read: a page's size, the pages' total and their
// count; a `links.next` that leads back to a page already read stops the import (it would never end).

/** The most bytes one page may have (Keygen's pages of 100 resources are well under 1 MiB). */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;
/** The most bytes of all pages together: what an account of 100,000 licenses takes, with room to spare. */
export const MAX_ACCOUNT_BYTES = 512 * 1024 * 1024;
/** The most pages of one import. */
export const MAX_PAGES = 50_000;
/** Keygen's largest page size: the fewest requests. */
const PAGE_SIZE = 100;

/** A Keygen account as read: every resource by type and id, and the entitlements of each policy and license. */
export interface KeygenAccount {
  resources: Record<KeygenType, Map<string, KeygenResource>>;
  /** The entitlements of each policy (GET /policies/{id}/entitlements). */
  policyEntitlements: Map<string, Set<string>>;
  /** The entitlements of each license (GET /licenses/{id}/entitlements: its policy's and its own), when read. */
  licenseEntitlements: Map<string, Set<string>>;
  /** Whether the licenses' own entitlements were read (else a license gets its policy's). */
  licenseEntitlementsRead: boolean;
  pages: number;
  bytes: number;
}

export const emptyAccount = (): KeygenAccount => ({
  resources: Object.fromEntries(KEYGEN_TYPES.map((type) => [type, new Map()])) as KeygenAccount['resources'],
  policyEntitlements: new Map(),
  licenseEntitlements: new Map(),
  licenseEntitlementsRead: false,
  pages: 0,
  bytes: 0,
});

const ENTITLEMENTS_OF = /\/(policies|licenses)\/([^/?#]+)\/entitlements(?:[/?#]|$)/;

/** Adds one page to the account: a page of a policy's or license's entitlements (its `links.self`, or the file's path, says whose) is recorded as theirs too. */
export function addPage(account: KeygenAccount, page: KeygenPage, origin: string, bytes: number) {
  account.pages += 1;
  account.bytes += bytes;
  if (account.pages > MAX_PAGES) throw new AppError('InvalidRequest', `An import reads at most ${MAX_PAGES} pages.`);
  if (account.bytes > MAX_ACCOUNT_BYTES) throw new AppError('InvalidRequest', `An import reads at most ${MAX_ACCOUNT_BYTES} bytes of documents.`);
  const scope = (page.self ?? origin).match(ENTITLEMENTS_OF) ?? origin.match(ENTITLEMENTS_OF);
  for (const resource of page.data) {
    account.resources[resource.type].set(resource.id, resource);
    if (scope && resource.type === 'entitlements') {
      const owners = scope[1] === 'policies' ? account.policyEntitlements : account.licenseEntitlements;
      const id = decodeURIComponent(scope[2]);
      if (!owners.has(id)) owners.set(id, new Set());
      owners.get(id)!.add(resource.id);
      if (scope[1] === 'licenses') account.licenseEntitlementsRead = true;
    }
  }
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw malformed(where, `not JSON (${(error as Error).message.slice(0, 120)})`);
  }
}

/** Reads at most `limit` bytes of a file; a larger one is refused by its size, before any of it is read. */
async function readBounded(file: string, where: string, limit = MAX_PAGE_BYTES): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size > limit) throw malformed(where, `${size} bytes, more than a page may have (${limit}): a Keygen page is one list endpoint's answer`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** Every page saved under `dir` (`.json` files, sub-directories up to 3 deep, in name order). */
export async function readDirectory(dir: string): Promise<KeygenAccount> {
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) throw new AppError('InvalidRequest', `${dir} is not a directory of Keygen documents.`);
  const files: string[] = [];
  const walk = async (at: string, depth: number) => {
    const entries = (await readdir(at, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory() && depth < 3) await walk(full, depth + 1);
      else if (entry.isFile() && entry.name.endsWith('.json')) files.push(full);
      if (files.length > MAX_PAGES) throw new AppError('InvalidRequest', `An import reads at most ${MAX_PAGES} pages.`);
    }
  };
  await walk(dir, 0);
  if (!files.length) throw new AppError('InvalidRequest', `${dir} holds no .json file: save each page of Keygen's list endpoints as a .json file there.`);
  const account = emptyAccount();
  for (const file of files) {
    const where = path.relative(dir, file);
    const text = await readBounded(file, where);
    addPage(account, parsePage(parseJson(text, where), where), where.split(path.sep).join('/'), Buffer.byteLength(text));
  }
  return account;
}

/**
 * A bundle: one page a line (NDJSON), each line optionally `{ "path": "policies/<id>/entitlements", "document": {…} }`
 * to say whose entitlements a page lists when its `links.self` does not. Lines are read one at a time.
 */
export async function readBundle(lines: AsyncIterable<string>): Promise<KeygenAccount> {
  const account = emptyAccount();
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (!line.trim()) continue;
    const where = `line ${number}`;
    if (line.length > MAX_PAGE_BYTES) throw malformed(where, `longer than a page may be (${MAX_PAGE_BYTES} bytes)`);
    const value = parseJson(line, where) as { path?: unknown; document?: unknown; data?: unknown };
    const wrapped = value && typeof value === 'object' && 'document' in value && !('data' in value);
    const origin = wrapped && typeof value.path === 'string' ? value.path.slice(0, 1000) : where;
    addPage(account, parsePage(wrapped ? value.document : value, where), origin, Buffer.byteLength(line));
  }
  if (account.pages === 0) throw new AppError('InvalidRequest', 'The bundle holds no page.');
  return account;
}

/**
 * The lines of a bundle arriving as bytes (an HTTP request's body), one at a time: a line longer than a page may be
 * is refused when the bytes read pass that bound, before the rest of it is held in memory.
 */
export async function* bundleLines(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let pending = '';
  let number = 0;
  const decode = (bytes?: Uint8Array) => {
    try {
      return bytes ? decoder.decode(bytes, { stream: true }) : decoder.decode();
    } catch {
      throw malformed(`line ${number + 1}`, 'not UTF-8 text');
    }
  };
  for await (const chunk of chunks) {
    pending += decode(chunk);
    let end: number;
    while ((end = pending.indexOf('\n')) >= 0) {
      number += 1;
      yield pending.slice(0, end);
      pending = pending.slice(end + 1);
    }
    if (pending.length > MAX_PAGE_BYTES) throw malformed(`line ${number + 1}`, `longer than a page may be (${MAX_PAGE_BYTES} bytes)`);
  }
  pending += decode();
  if (pending) yield pending;
}

export interface ApiSource {
  /** The account's API root, e.g. https://api.keygen.sh/v1/accounts/<account>. */
  url: string;
  /** An admin (or product) token: sent as a bearer token to this origin only, never logged. */
  token: string;
  /** Also read each license's own entitlements (one request per license). */
  licenseEntitlements?: boolean;
  /** Progress: called after each page. */
  onPage?: (pages: number) => void;
  fetch?: typeof fetch;
}

const REQUEST_TIMEOUT_MS = 60_000;
const MAX_ATTEMPTS = 4;

/** The answer's body, read as a stream up to MAX_PAGE_BYTES (a longer one is refused when it gets there). */
async function boundedBody(response: Response, where: string): Promise<string> {
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > MAX_PAGE_BYTES) {
    await response.body?.cancel();
    throw malformed(where, `the answer has ${length} bytes, more than a page may have (${MAX_PAGE_BYTES})`);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_PAGE_BYTES) {
      await reader.cancel();
      throw malformed(where, `the answer is longer than a page may be (${MAX_PAGE_BYTES} bytes)`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads the account from Keygen's API: each list endpoint page by page through `links.next`, then each policy's entitlements. */
export async function readApi(source: ApiSource): Promise<KeygenAccount> {
  let base: URL;
  try {
    base = new URL(source.url.replace(/\/+$/, ''));
  } catch {
    throw new AppError('InvalidRequest', '--url must be the account\'s API address, e.g. https://api.keygen.sh/v1/accounts/<account>');
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new AppError('InvalidRequest', '--url must be an http(s) address');
  if (base.username || base.password) throw new AppError('InvalidRequest', '--url must not hold credentials: give the token through KEYGEN_TOKEN or standard input');
  if (!source.token) throw new AppError('InvalidRequest', 'A Keygen token is required (KEYGEN_TOKEN, or on standard input)');
  const doFetch = source.fetch ?? fetch;
  const account = emptyAccount();

  const get = async (url: URL, where: string): Promise<string> => {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await doFetch(url, {
          headers: { authorization: `Bearer ${source.token}`, accept: 'application/vnd.api+json' },
          redirect: 'error', // a redirect could carry the token elsewhere
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
      } catch (error) {
        if (attempt < MAX_ATTEMPTS) continue;
        throw new AppError('ServiceUnavailable', `${where}: Keygen did not answer (${(error as Error).name === 'TimeoutError' ? 'timed out' : (error as Error).message.slice(0, 120)})`);
      }
      if (response.status === 401 || response.status === 403) {
        await response.body?.cancel();
        throw new AppError('InvalidRequest', `${where}: Keygen refused the token (${response.status}): use an admin token of this account`);
      }
      if ((response.status === 429 || response.status >= 500) && attempt < MAX_ATTEMPTS) {
        await response.body?.cancel();
        const wait = Math.min(Number(response.headers.get('retry-after')) || attempt * 2, 30);
        await new Promise((resolve) => setTimeout(resolve, wait * 1000));
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new AppError('InvalidRequest', `${where}: Keygen answered ${response.status}`);
      }
      return boundedBody(response, where);
    }
  };

  /** Every page of one list endpoint; `links.next` must stay on the API's origin and never lead back. */
  const readList = async (listPath: string) => {
    let url: URL | null = new URL(`${base.pathname}/${listPath}`, base);
    url.searchParams.set('page[size]', String(PAGE_SIZE));
    url.searchParams.set('page[number]', '1');
    const seen = new Set<string>();
    while (url) {
      const where = url.pathname.slice(base.pathname.length + 1) || url.pathname;
      const id = `${url.pathname}?${[...url.searchParams].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join('&')}`;
      if (seen.has(id)) throw new AppError('InvalidRequest', `${where}: links.next leads back to a page already read (${decodeURIComponent(url.search)}): the listing would never end`);
      seen.add(id);
      const body = await get(url, where);
      const page = parsePage(parseJson(body, where), `${where}${decodeURIComponent(url.search)}`);
      addPage(account, page, url.pathname, Buffer.byteLength(body));
      source.onPage?.(account.pages);
      if (!page.next) break;
      const next: URL = new URL(page.next, base);
      if (next.origin !== base.origin) throw new AppError('InvalidRequest', `${where}: links.next leads to another host (${next.origin}): the token is sent to ${base.origin} only`);
      url = next;
    }
  };

  for (const type of ['products', 'entitlements', 'policies', 'users', 'licenses', 'machines'] as const) await readList(type);
  for (const policyId of account.resources.policies.keys()) {
    account.policyEntitlements.set(policyId, new Set());
    await readList(`policies/${encodeURIComponent(policyId)}/entitlements`);
  }
  if (source.licenseEntitlements) {
    for (const licenseId of account.resources.licenses.keys()) {
      account.licenseEntitlements.set(licenseId, new Set());
      await readList(`licenses/${encodeURIComponent(licenseId)}/entitlements`);
    }
    account.licenseEntitlementsRead = true;
  }
  return account;
}
