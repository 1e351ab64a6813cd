import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { RouteConfig, z } from '@hono/zod-openapi';
import { parse as parseContentType } from 'content-type';
import type { AppDeps } from '../deps.js';
import { AppError, toAppError } from '../domain/errors.js';
import { LICENSING_OPERATIONS } from '../metrics/index.js';
import { invalidFields, unstorableStringError } from '../services/validation.js';
import { errorBody, errorHeaders } from './errors.js';
import { clientIpResolver } from './middleware/client-ip.js';
import { maskCredentials, refuseCredentialsIn } from './middleware/credentials-in-url.js';
import { logRequest } from './middleware/logging.js';
import { countRequest } from './middleware/metrics.js';
import { rateLimitHeaders } from './middleware/rate-limit.js';
import { requestIdOf } from './middleware/request-id.js';

/**
 * The public licensing API (`/api/v1/*`) served straight on `node:http`: no web Request/Response objects, no
 * middleware chain, no AsyncLocalStorage scope per call (docs/performance.md). It is the transport only: each route
 * is a `createRoute` definition (its schema validates the body; rest/v1 builds the OpenAPI document from the same
 * objects) and a transport-neutral handler (validated body and request facts in, JSON answer out) that calls a service.
 * What the Hono app's middleware does for every other path happens here, in this order, for every call: request id,
 * client IP, nosniff, CORS (for requests with an Origin), the refusal of credentials in the URL, the per-IP rate limit
 * and its headers, the route, the body (size, media type, JSON, NUL / lone surrogates, the schema), the handler; then
 * metrics and the request log.
 */

export const PUBLIC_API_PREFIX = '/api/v1';
export const MAX_PUBLIC_BODY_BYTES = 16 * 1024;

/** What a handler gets besides its validated body. */
export interface PublicCall<Body> {
  body: Body;
  clientIp: string;
  /** A request header by its lower-case name. */
  header(name: string): string | undefined;
  /** The values of the path's `{name}` segments (a route with a templated path). */
  params?: Record<string, string>;
  /** The body exactly as received (UTF-8), for a route that takes it raw (signature checks). */
  rawBody?: string;
  /** The query parameters, validated by the route's `request.query` schema (the first value of each name). */
  query?: Record<string, unknown>;
}

/** A handler's answer: HTTP 200 with this JSON body (and these headers). Errors are thrown as AppError. */
export interface PublicAnswer {
  body: object;
  headers?: Record<string, string>;
  /** Instead of the JSON body: these bytes, streamed with backpressure (an artifact download); `headers` describe them. */
  stream?: NodeJS.ReadableStream;
  /**
   * Another success status: with `stream`, the bytes under it; alone, an answer without a body (204 No Content, or a
   * redirect with `Location` in `headers`) — the update feeds, whose clients expect those.
   */
  status?: 200 | 204 | 302;
}

export interface PublicRoute {
  /** The `createRoute` object: method, path under /api/v1, JSON body schema; the OpenAPI document lists it. */
  definition: RouteConfig;
  handle(call: PublicCall<unknown>): Promise<PublicAnswer>;
  /** Takes its body raw (any media type, at most this many bytes), not parsed by the route's schema. */
  rawBodyBytes?: number;
  /**
   * `refusals`: only refused requests (400, 401, 404; an oversized body is a 400) count against the client IP's budget, and an IP that spent it
   * is refused. For signed server-to-server callers: a payment provider delivers every company's events from a few
   * addresses, so counting its verified deliveries per IP would let one company's sales delay another's.
   */
  ipLimit?: 'all' | 'refusals';
}

type JsonSchemaOf<R> = R extends { request: { body: { content: { 'application/json': { schema: infer S } } } } } ? S : never;
/** The body type a route's schema validates to (undefined for a route without a body). */
export type BodyOf<R> = [JsonSchemaOf<R>] extends [never] ? undefined : JsonSchemaOf<R> extends z.ZodType ? z.output<JsonSchemaOf<R>> : never;

/** A public route: its definition and its handler, typed by the definition's body schema. */
export function publicRoute<R extends RouteConfig>(definition: R, handle: (call: PublicCall<BodyOf<R>>) => Promise<PublicAnswer>, options: Pick<PublicRoute, 'rawBodyBytes' | 'ipLimit'> = {}): PublicRoute {
  return { definition, handle: handle as PublicRoute['handle'], ...options };
}

// Idempotent-Replayed tells a browser client that a meter call was a repeat (docs/integrate/sdk.md).
const EXPOSED_HEADERS = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, idempotent-replayed';
const NOT_JSON = 'Send the body as JSON with Content-Type: application/json.';
const TOO_LARGE = `The request body is larger than ${MAX_PUBLIC_BODY_BYTES / 1024} KiB.`;
const utf8 = new TextDecoder();

/** `application/json` (any letter case), optionally with `charset=utf-8`: the one media type the API documents. */
function isDocumentedJson(contentType: string): boolean {
  try {
    const { type, parameters } = parseContentType(contentType);
    return type === 'application/json' && Object.entries(parameters).every(([name, value]) => name === 'charset' && value.toLowerCase() === 'utf-8');
  } catch {
    return false;
  }
}

/** Whether a request URL belongs to the public API (served by publicApiHandler, not by the Hono app). */
export function isPublicApiUrl(url: string): boolean {
  return url.startsWith(PUBLIC_API_PREFIX) && (url.length === PUBLIC_API_PREFIX.length || url[PUBLIC_API_PREFIX.length] === '/' || url[PUBLIC_API_PREFIX.length] === '?');
}

interface Endpoint {
  route: PublicRoute;
  /** The template counted in the metrics (`/api/v1/validate`). */
  template: string;
  /** The JSON body schema, when the route takes a body; `required: false` lets a call without one through as `{}`. */
  schema?: z.ZodType;
  /** The query parameters' schema, when the route takes some. */
  querySchema?: z.ZodType;
  /** Counted as a licensing operation (its outcome: valid, or the rejection's errorCode). */
  licensing: boolean;
  /** A templated path's segments (`{name}` matches one non-empty segment). */
  segments?: string[];
}

/** The endpoint of a path with `{name}` segments, and the values; none when no template matches. */
function matchTemplate(templated: Endpoint[], method: string, path: string): { endpoint: Endpoint; params: Record<string, string> } | undefined {
  const parts = path.split('/');
  for (const endpoint of templated) {
    if (endpoint.route.definition.method.toUpperCase() !== method || endpoint.segments!.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const matches = endpoint.segments!.every((segment, index) => {
      if (!segment.startsWith('{')) return segment === parts[index];
      if (!parts[index] || parts[index].length > 100) return false;
      params[segment.slice(1, -1)] = parts[index];
      return true;
    });
    if (matches) return { endpoint, params };
  }
  return undefined;
}

/** The request handler of the public API for `routes`; answers every URL isPublicApiUrl accepts. */
export function publicApiHandler(deps: AppDeps, routes: PublicRoute[]): (request: IncomingMessage, response: ServerResponse) => void {
  const clientIpOf = clientIpResolver(deps.config.trustProxy);
  const endpoints = new Map<string, Endpoint>();
  const templated: Endpoint[] = [];
  for (const route of routes) {
    const template = PUBLIC_API_PREFIX + route.definition.path;
    const media = route.definition.request?.body?.content?.['application/json'];
    const schema = media && 'schema' in media && !route.rawBodyBytes ? (media.schema as z.ZodType) : undefined;
    const querySchema = route.definition.request?.query as z.ZodType | undefined;
    const endpoint = { route, template, schema, querySchema, licensing: template in LICENSING_OPERATIONS };
    if (template.includes('{')) templated.push({ ...endpoint, segments: template.split('/') });
    else endpoints.set(`${route.definition.method.toUpperCase()} ${template}`, endpoint);
  }

  /** What an `ipLimit: 'refusals'` route counts against the IP: malformed or oversize (400), unsigned or badly signed, unknown. */
  const COUNTED_REFUSALS = new Set([400, 401, 404]);

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = performance.now();
    const method = request.method ?? 'GET';
    const url = request.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    const requestId = requestIdOf(header(request, 'x-request-id'));
    const clientIp = clientIpOf(request.socket.remoteAddress, header(request, 'x-forwarded-for'));
    // HEAD is GET without the body (node:http leaves it out).
    const routed = endpoints.get(`${method === 'HEAD' ? 'GET' : method} ${path}`);
    const matched = routed ? undefined : matchTemplate(templated, method === 'HEAD' ? 'GET' : method, path);
    const endpoint = routed ?? matched?.endpoint;
    const headers: Record<string, string> = { 'X-Request-Id': requestId, 'X-Content-Type-Options': 'nosniff' };
    if (request.headers.origin !== undefined) {
      // Any origin may call the public API (web apps validate too); it never uses cookies. The CORS headers go only to
      // CORS requests (a browser always sends Origin on them): most callers are applications, which would parse ~170
      // bytes per answer for nothing.
      headers['Access-Control-Allow-Origin'] = '*';
      headers['Access-Control-Expose-Headers'] = EXPOSED_HEADERS;
    }
    // An answer a cache could keep (GET) names Origin as a key, so one stored without the CORS headers is not served to a browser.
    if (method === 'GET' || method === 'HEAD') headers.Vary = 'Origin';
    let status = 200;
    let body: object | undefined;
    let stream: NodeJS.ReadableStream | undefined;
    let error: AppError | undefined;
    try {
      refuseCredentialsIn(path, queryAt === -1 ? undefined : url.slice(queryAt + 1));
      if (method === 'OPTIONS') {
        status = 204;
        Object.assign(headers, preflightHeaders(request));
      } else {
        if (endpoint?.route.ipLimit === 'refusals') await deps.rateLimits.ipHasBudget(clientIp);
        else Object.assign(headers, rateLimitHeaders(await deps.rateLimits.perIp(clientIp)));
        if (!endpoint) throw new AppError('NotFound', `No route for ${method} ${maskCredentials(path)}.`);
        const rawBodyBytes = endpoint.route.rawBodyBytes;
        const rawBody = rawBodyBytes ? await readText(request, rawBodyBytes) : undefined;
        const input = endpoint.schema ? validated(endpoint.schema, await jsonBody(request)) : undefined;
        const query = endpoint.querySchema ? validated(endpoint.querySchema, queryParameters(queryAt === -1 ? '' : url.slice(queryAt + 1))) as Record<string, unknown> : undefined;
        const answer = await endpoint.route.handle({ body: input, clientIp, header: (name) => header(request, name), params: matched?.params ?? {}, rawBody, query });
        body = answer.body;
        stream = answer.stream;
        if (answer.status !== undefined) {
          status = answer.status;
          if (!stream && status !== 200) body = undefined;
        }
        if (answer.headers) Object.assign(headers, answer.headers);
      }
    } catch (thrown) {
      deps.metrics?.databaseError(thrown);
      error = toAppError(thrown, deps.logger, requestId);
      status = error.status;
      if (endpoint?.route.ipLimit === 'refusals' && COUNTED_REFUSALS.has(status)) await deps.rateLimits.perIp(clientIp).catch(() => undefined);
      body = errorBody(error, requestId);
      Object.assign(headers, errorHeaders(error));
    }
    if (stream) {
      response.writeHead(status, headers);
      if (method === 'HEAD') {
        (stream as unknown as { destroy?: () => void }).destroy?.();
        response.end();
      } else {
        // The answer is already under way: a failure now (the client went away, the store broke off) ends the
        // connection, so the client sees a short body, never a complete-looking wrong one.
        await pipeline(stream, response).catch((failure: unknown) => {
          deps.logger.warn({ requestId, err: (failure as Error).message }, 'download broke off');
          response.destroy();
        });
      }
    } else if (body === undefined) {
      response.writeHead(status, headers).end();
    } else {
      const json = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(json));
      response.writeHead(status, headers).end(json);
    }
    if (deps.metrics) {
      const result = endpoint?.licensing && !error ? (body as { errorCode?: unknown }) : undefined;
      countRequest(deps.metrics, { route: endpoint && method !== 'OPTIONS' ? endpoint.template : 'unmatched', method, status, started, error, result });
    }
    logRequest(deps.logger, { requestId, method, path, status, ip: clientIp, started });
  }

  return (request, response) => {
    serve(request, response).catch((error: unknown) => {
      // Only a failure to write the answer gets here (the client went away): nothing left to tell it.
      deps.logger.warn({ err: (error as Error).message }, 'public API answer not written');
      response.destroy();
    });
  };
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A preflight: every method and header the browser asks for (the API reads no cookie, so nothing is at stake). */
function preflightHeaders(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = { 'Access-Control-Allow-Methods': 'GET,HEAD,POST' };
  const asked = header(request, 'access-control-request-headers');
  if (asked) {
    headers['Access-Control-Allow-Headers'] = asked.split(',').map((name) => name.trim()).join(',');
    headers.Vary = 'Access-Control-Request-Headers';
  }
  return headers;
}

/**
 * The request's JSON body, parsed. A POST without Content-Type and without a body reads as `{}` (the schema then names
 * what is missing); any media type but application/json is refused, as is a body over 16 KiB (by Content-Length
 * before reading, else while counting), malformed JSON, and a NUL or lone surrogate anywhere (PostgreSQL cannot
 * store it).
 */
async function jsonBody(request: IncomingMessage): Promise<unknown> {
  const length = request.headers['content-length'];
  if (length !== undefined && request.headers['transfer-encoding'] === undefined && Number(length) > MAX_PUBLIC_BODY_BYTES) {
    throw new AppError('InvalidRequest', TOO_LARGE);
  }
  const contentType = request.headers['content-type'];
  if (contentType !== undefined && !isDocumentedJson(contentType)) throw new AppError('InvalidRequest', NOT_JSON);
  const text = await readText(request);
  if (contentType === undefined) {
    if (text !== '') throw new AppError('InvalidRequest', NOT_JSON);
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AppError('InvalidRequest', 'Malformed JSON in request body');
  }
  const unstorable = unstorableStringError(parsed);
  if (unstorable) throw unstorable;
  return parsed;
}

/** The body as UTF-8 text, at most `maxBytes` (the rest of a larger one is discarded unread). */
function readText(request: IncomingMessage, maxBytes = MAX_PUBLIC_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const length = request.headers['content-length'];
    if (length !== undefined && request.headers['transfer-encoding'] === undefined && Number(length) > maxBytes) {
      request.resume();
      reject(new AppError('InvalidRequest', `The request body is larger than ${maxBytes / 1024} KiB.`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        request.off('data', onData).off('end', onEnd).off('error', reject);
        request.resume();
        reject(new AppError('InvalidRequest', `The request body is larger than ${maxBytes / 1024} KiB.`));
      } else chunks.push(chunk);
    };
    const onEnd = () => resolve(utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    request.on('data', onData).on('end', onEnd).on('error', reject);
  });
}

/** The query string's parameters, the first value of each name (`a=1&a=2` → `{ a: '1' }`). */
function queryParameters(search: string): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(search)) if (!(name in parameters)) parameters[name] = value;
  const unstorable = unstorableStringError(parameters);
  if (unstorable) throw unstorable;
  return parameters;
}

/** The body checked against the route's schema; every problem named by its field (docs/integrate/rest-api.md "HTTP errors"). */
function validated(schema: z.ZodType, body: unknown): unknown {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw invalidFields(result.error, 'Invalid request');
}
