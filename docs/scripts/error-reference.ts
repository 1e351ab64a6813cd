/**
 * Writes docs/reference/errors.md, the one reference of every error code, from the code's own lists:
 *   - REJECTION_CODES (server/src/domain/errors.ts): the REST rejections, HTTP 200 with `isValid: false`;
 *   - ERROR_STATUS (the same file): the HTTP errors and the GraphQL `extensions.code` values, with their status;
 *   - GRAPHQL_REQUEST_ERROR_CODES (server/src/graphql/request-errors.ts): the codes graphql-yoga gives a document
 *     that does not parse or validate;
 *   - the TypeScript SDK's code types (sdk/src/errors.ts: `RejectionCode`, `ApiErrorCode`, … each the codes of one
 *     error class) and the codes its sources throw as a plain `KeyforgeError`;
 *   - the native SDKs' lists, once added to NATIVE_SDK_ERRORS below.
 * The text of each row comes from ERROR_GUIDANCE (docs/scripts/error-guidance.ts), keyed by code. A code without
 * guidance, or guidance for a code no list has, fails the generator: a new code cannot be missing from the page.
 *   tsx docs/scripts/error-reference.ts          write the page (run by `pnpm docs:generate`)
 *   tsx docs/scripts/error-reference.ts --check  exit 1 when the committed page differs (what it does with CI set)
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_STATUS, REJECTION_CODES } from '../../server/src/domain/errors.js';
import { GRAPHQL_REQUEST_ERROR_CODES } from '../../server/src/graphql/request-errors.js';
import { ERROR_GUIDANCE, type Guidance } from './error-guidance.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ERRORS_PAGE = path.join(ROOT, 'docs/reference/errors.md');

/** One SDK's errors: each code with the class (or exception type) that carries it. */
export interface SdkErrorList {
  /** The SDK's name as the page's heading shows it, e.g. "Python SDK (`keyforge`)". */
  sdk: string;
  /** Where the list comes from, shown under the heading. */
  source: string;
  /** The first column's heading: what `className` names (default `Class`; the Go SDK's is its error's `Kind`). */
  column?: string;
  errors: { className: string; code: string }[];
}

/** The TypeScript SDK's error classes, by the code type each one carries (sdk/src/errors.ts). */
const TS_CLASS_OF_TYPE: Record<string, string> = {
  RejectionCode: 'LicenseRejectedError',
  ApiErrorCode: 'ApiError',
  NetworkErrorCode: 'NetworkError',
  VerificationErrorCode: 'VerificationError',
  SessionErrorCode: 'KeyforgeError',
};

/** The string literals of each exported `type …Code = 'A' | 'B' …` of a TypeScript source (comments removed). */
export function codeTypes(source: string): Map<string, string[]> {
  const withoutComments = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  const types = new Map<string, string[]>();
  for (const match of withoutComments.matchAll(/export type (\w+Code)\s*=([^;]*);/g)) {
    const literals = [...match[2].matchAll(/'([A-Za-z]+)'/g)].map((literal) => literal[1]);
    if (literals.length) types.set(match[1], literals);
  }
  return types;
}

/** The TypeScript SDK's errors: its code types, plus codes thrown as a plain `new KeyforgeError('Code', …)`. */
export function typescriptSdkErrors(sdkSource = path.join(ROOT, 'sdk/src')): SdkErrorList {
  const types = codeTypes(readFileSync(path.join(sdkSource, 'errors.ts'), 'utf8'));
  const unknownTypes = [...types.keys()].filter((name) => !(name in TS_CLASS_OF_TYPE));
  if (unknownTypes.length) throw new Error(`sdk/src/errors.ts has code types the generator does not place under a class: ${unknownTypes.join(', ')} (add them to TS_CLASS_OF_TYPE)`);
  const errors: { className: string; code: string }[] = [];
  const add = (className: string, code: string) => {
    if (!errors.some((error) => error.className === className && error.code === code)) errors.push({ className, code });
  };
  for (const [type, codes] of types) for (const code of codes) add(TS_CLASS_OF_TYPE[type], code);
  // Codes thrown as a plain KeyforgeError: new ones appear here without anyone listing them.
  const typed = new Set([...types.values()].flat());
  for (const file of readdirSync(sdkSource).filter((name) => name.endsWith('.ts')).sort()) {
    for (const match of readFileSync(path.join(sdkSource, file), 'utf8').matchAll(/new KeyforgeError\('([A-Za-z]+)'/g)) {
      if (!typed.has(match[1])) add('KeyforgeError', match[1]);
    }
  }
  return { sdk: 'TypeScript SDK (`@keyforge/client`)', source: 'sdk/src/errors.ts: every error is a `KeyforgeError` with a `code`; the subclass says which kind.', errors };
}

/** The Python SDK's errors: `ERROR_CODES` (class name → codes) of sdks/python/src/keyforge/errors.py. */
export function pythonSdkErrors(source = path.join(ROOT, 'sdks/python/src/keyforge/errors.py')): SdkErrorList {
  const text = readFileSync(source, 'utf8').replace(/#[^\n]*/g, '');
  const block = /^ERROR_CODES[^=\n]*=\s*\{([\s\S]*?)^\}/m.exec(text)?.[1];
  const errors: { className: string; code: string }[] = [];
  for (const [, className, codes] of block?.matchAll(/"(\w+)":\s*\(([^)]*)\)/g) ?? []) {
    for (const [, code] of codes.matchAll(/"([A-Za-z]+)"/g)) errors.push({ className, code });
  }
  if (!errors.length) throw new Error(`${source} has no ERROR_CODES the generator can read ({ "Class": ("Code", …), … })`);
  return { sdk: 'Python SDK (`keyforge`)', source: 'sdks/python/src/keyforge/errors.py (`ERROR_CODES`): every error is a `KeyforgeError` with a `code`, the TypeScript SDK\'s codes; the subclass says which kind.', errors };
}

/**
 * The .NET SDK's errors: the constants of `ErrorCodes` in sdks/dotnet/src/Keyforge/Errors.cs, each under the
 * `// SomethingException: …` comment that opens its group, plus codes its sources throw as a plain `KeyforgeException`.
 */
export function dotnetSdkErrors(sdkSource = path.join(ROOT, 'sdks/dotnet/src/Keyforge')): SdkErrorList {
  const text = readFileSync(path.join(sdkSource, 'Errors.cs'), 'utf8');
  const body = /public static class ErrorCodes\s*\{([\s\S]*?)\n    \}/.exec(text)?.[1] ?? '';
  const errors: { className: string; code: string }[] = [];
  let className: string | undefined;
  for (const line of body.split('\n')) {
    const group = /^\s*\/\/\s*(\w+Exception):/.exec(line);
    if (group) className = group[1];
    const constant = /public const string (\w+) = "([A-Za-z]+)";/.exec(line);
    if (constant && className) errors.push({ className, code: constant[2] });
  }
  if (!errors.length) throw new Error(`${sdkSource}/Errors.cs has no ErrorCodes constants under "// …Exception:" comments the generator can read`);
  const listed = new Set(errors.map((error) => error.code));
  for (const file of readdirSync(sdkSource).filter((name) => name.endsWith('.cs')).sort()) {
    for (const match of readFileSync(path.join(sdkSource, file), 'utf8').matchAll(/new KeyforgeException\("([A-Za-z]+)"/g)) {
      if (!listed.has(match[1])) (listed.add(match[1]), errors.push({ className: 'KeyforgeException', code: match[1] }));
    }
  }
  return { sdk: '.NET SDK (`Keyforge`)', source: 'sdks/dotnet/src/Keyforge/Errors.cs (`ErrorCodes`): every error is a `KeyforgeException` with a `Code`, the TypeScript SDK\'s codes; the subclass says which kind.', errors };
}

/**
 * The Go SDK's errors: the `Code…` constants of sdks/go/errors.go, each under the `// KindSomething: …` comment that
 * opens its group (the `Kind` an `*Error` with that code carries), plus codes its sources set as a literal
 * (`Code: "Something"`).
 */
export function goSdkErrors(sdkSource = path.join(ROOT, 'sdks/go')): SdkErrorList {
  const text = readFileSync(path.join(sdkSource, 'errors.go'), 'utf8');
  const body = /^\/\/ Error codes:[^\n]*\n(?:\/\/[^\n]*\n)*const \(([\s\S]*?)^\)/m.exec(text)?.[1] ?? '';
  const errors: { className: string; code: string }[] = [];
  let kind: string | undefined;
  for (const line of body.split('\n')) {
    const group = /^\s*\/\/\s*(Kind\w+):/.exec(line);
    if (group) kind = group[1];
    const constant = /^\s*Code\w+\s*=\s*"([A-Za-z]+)"/.exec(line);
    if (constant && kind) errors.push({ className: kind, code: constant[1] });
  }
  if (!errors.length) throw new Error(`${sdkSource}/errors.go has no Code constants under "// Kind…:" comments the generator can read`);
  const listed = new Set(errors.map((error) => error.code));
  for (const file of readdirSync(sdkSource).filter((name) => name.endsWith('.go') && !name.endsWith('_test.go')).sort()) {
    for (const match of readFileSync(path.join(sdkSource, file), 'utf8').matchAll(/Code:\s*"([A-Za-z]+)",\s*Kind:\s*(Kind\w+)/g)) {
      if (!listed.has(match[1])) (listed.add(match[1]), errors.push({ className: match[2], code: match[1] }));
    }
  }
  return {
    sdk: 'Go SDK (`keyforge`)',
    source: 'sdks/go/errors.go (the `Code…` constants): every error is an `*Error` with a `Code`, the TypeScript SDK\'s codes, and a `Kind` that says which kind (`errors.Is` with the `Err…` sentinels compares codes).',
    column: '`Kind`',
    errors,
  };
}

// ─── NATIVE SDK ERROR LISTS ────────────────────────────────────────────────────────────────────────────────────────
// Add each native SDK (sdks/python, sdks/go, sdks/dotnet) here: a function that reads the SDK's own list of codes
// (its errors module) and returns an SdkErrorList. The SDKs reuse the TypeScript SDK's codes, so their guidance is
// already in ERROR_GUIDANCE; a code of their own needs an entry there, or the generator fails.
export const NATIVE_SDK_ERRORS: (() => SdkErrorList)[] = [pythonSdkErrors, goSdkErrors, dotnetSdkErrors];
// ────────────────────────────────────────────────────────────────────────────────────────────────────────────────────

export interface ErrorLists {
  rejections: readonly string[];
  httpErrors: Record<string, number>;
  graphqlRequestErrors: readonly string[];
  sdks: SdkErrorList[];
}

export function errorLists(): ErrorLists {
  return { rejections: REJECTION_CODES, httpErrors: ERROR_STATUS, graphqlRequestErrors: GRAPHQL_REQUEST_ERROR_CODES, sdks: [typescriptSdkErrors(), ...NATIVE_SDK_ERRORS.map((list) => list())] };
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The page; throws, naming each code, when a code has no guidance or guidance names a code no list has. */
export function renderErrorsPage(lists: ErrorLists = errorLists(), guidance: Record<string, Guidance> = ERROR_GUIDANCE): string {
  const allCodes = new Set([...lists.rejections, ...Object.keys(lists.httpErrors), ...lists.graphqlRequestErrors, ...lists.sdks.flatMap((sdk) => sdk.errors.map((error) => error.code))]);
  const missing = [...allCodes].filter((code) => !guidance[code]?.means.trim() || !guidance[code]?.action.trim());
  const stale = Object.keys(guidance).filter((code) => !allCodes.has(code));
  const problems = [
    ...(missing.length ? [`no guidance for ${missing.join(', ')}: add what each means and what to do to docs/scripts/error-guidance.ts`] : []),
    ...(stale.length ? [`guidance for codes no list has any more: ${stale.join(', ')} (remove them from docs/scripts/error-guidance.ts)`] : []),
  ];
  if (problems.length) throw new Error(`docs/reference/errors.md cannot be generated: ${problems.join('; ')}`);

  const row = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  const rejectionRows = lists.rejections.map((code) => row([`\`${code}\``, guidance[code].means, guidance[code].action]));
  const httpRows = Object.entries(lists.httpErrors).map(([code, status]) => row([String(status), `\`${code}\``, guidance[code].means, guidance[code].action]));
  const graphqlRows = lists.graphqlRequestErrors.map((code) => row([`\`${code}\``, guidance[code].means, guidance[code].action]));
  const rejectionSet = new Set(lists.rejections);
  const httpSet = new Set(Object.keys(lists.httpErrors));
  const sdkSections = lists.sdks.map((sdk) => {
    const rows = sdk.errors.map(({ className, code }) => {
      const also = rejectionSet.has(code) ? ' (a [rejection](#rejection-codes-http-200-isvalid-false))' : httpSet.has(code) ? ' (an [HTTP error](#http-errors-and-graphql-extensions-code))' : '';
      return row([`\`${className}\``, `\`${code}\`${also}`, guidance[code].means, guidance[code].action]);
    });
    return `### ${sdk.sdk}

${sdk.source}

| ${sdk.column ?? 'Class'} | \`code\` | Means | What to show or do |
|---|---|---|---|
${rows.join('\n')}
`;
  });

  return `<!-- Generated by docs/scripts/error-reference.ts from the code's lists of codes (server/src/domain/errors.ts, sdk/src/errors.ts) and the guidance in docs/scripts/error-guidance.ts: edit those, not this file. -->

# Error codes

Every code Keyforge answers with, and what your application should show or do. The codes come from three places:

- **Rejections** — the licensing API (\`/api/v1\`) answers **HTTP 200** with \`isValid: false\`, an \`errorCode\`
  and a \`message\` when it refuses a license. Grant access only when \`isValid\` is \`true\`.
- **HTTP errors** — a request that could not be handled is an HTTP error with the body
  \`{ "error": { "code", "message", "requestId", "fields"? } }\` (REST) and the status below. The management API's
  GraphQL answers the same codes in \`errors[].extensions.code\` with HTTP 200, as GraphQL does — except
  \`RateLimited\` (429) and \`ServiceUnavailable\` (503), which keep their status and \`Retry-After\`, and a missing
  or invalid credential on \`/api/*\` (401 with the REST body).
- **SDK errors** — the SDKs throw each refusal, HTTP error and failed check of a signed token as an error with a
  \`code\`: the server's codes unchanged, plus their own (no answer, a token that does not verify).

Messages are for people and may change; codes are stable ([Versioning](/reference/versioning)). Every response carries
\`X-Request-Id\`: quote it when reporting a problem. A symptom rather than a code: [Troubleshooting](/guide/troubleshooting).

## Rejection codes (HTTP 200, \`isValid: false\`)

| \`errorCode\` | Means | What to show or do |
|---|---|---|
${rejectionRows.join('\n')}

## HTTP errors and GraphQL \`extensions.code\`

| HTTP status | \`code\` | Means | What to show or do |
|---|---|---|---|
${httpRows.join('\n')}

A 429 or 503 carries \`Retry-After\` (seconds); retry those a bounded number of times, never a 400, 401, 403, 404,
409 or 422 unchanged.

GraphQL also answers these codes, from graphql-yoga, for a document refused before anything runs (HTTP 200):

| \`extensions.code\` | Means | What to show or do |
|---|---|---|
${graphqlRows.join('\n')}

A query over one of the shape [limits](/reference/limits#graphql-queries) (depth, aliases, directives, tokens) is
refused the same way, before it runs, with a message that names the limit. Treat a GraphQL error without a code as
\`InvalidRequest\`.

## SDK errors

${sdkSections.join('\n')}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const page = renderErrorsPage();
  if (process.argv.includes('--check') || process.env.CI) {
    let committed = '';
    try {
      committed = readFileSync(ERRORS_PAGE, 'utf8');
    } catch {}
    if (committed !== page) {
      console.error('docs/reference/errors.md is stale: run `tsx docs/scripts/error-reference.ts` and commit it');
      process.exit(1);
    }
  } else {
    writeFileSync(ERRORS_PAGE, page);
  }
}
