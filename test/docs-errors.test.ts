import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS_PAGE, codeTypes, dotnetSdkErrors, errorLists, goSdkErrors, renderErrorsPage, typescriptSdkErrors } from '../docs/scripts/error-reference.js';
import { ERROR_GUIDANCE } from '../docs/scripts/error-guidance.js';
import { ERROR_STATUS, REJECTION_CODES } from '../server/src/domain/errors.js';
import { GRAPHQL_REQUEST_ERROR_CODES } from '../server/src/graphql/request-errors.js';
import { startTestApp, type TestApp } from './support/harness.js';

/**
 * docs/reference/errors.md is generated from the code's own lists of codes (docs/scripts/error-reference.ts): every
 * code of every list has a row with its guidance, a code without guidance fails the generator, and the committed
 * page is what the generator writes.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('the error-code reference', () => {
  it('the GraphQL request codes it lists are the ones the server answers', async () => {
    const { token } = await t.setupAdmin();
    const code = async (query: string) => (await t.gql(query, {}, { token })).errors?.[0]?.extensions?.code;
    expect(await code('query { products(first: 1) { nodes { id } }')).toBe('GRAPHQL_PARSE_FAILED');
    expect(await code('query { noSuchField }')).toBe('GRAPHQL_VALIDATION_FAILED');
    expect([...GRAPHQL_REQUEST_ERROR_CODES].sort()).toEqual(['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED']);
  });

  it('has a row for every rejection code, HTTP error code and SDK error code', () => {
    const page = readFileSync(ERRORS_PAGE, 'utf8');
    for (const code of REJECTION_CODES) expect(page, code).toMatch(new RegExp(`^\\| \`${code}\` \\| `, 'm'));
    for (const [code, status] of Object.entries(ERROR_STATUS)) expect(page, code).toContain(`| ${status} | \`${code}\` | `);
    for (const code of GRAPHQL_REQUEST_ERROR_CODES) expect(page, code).toMatch(new RegExp(`^\\| \`${code}\` \\| `, 'm'));
    const sdk = typescriptSdkErrors();
    for (const { className, code } of sdk.errors) expect(page, code).toMatch(new RegExp(`^\\| \`${className}\` \\| \`${code}\``, 'm'));
    // The SDK's lists, read from its source: the classes' code types and the codes thrown as a plain KeyforgeError.
    const codes = (className: string) => sdk.errors.filter((error) => error.className === className).map((error) => error.code);
    expect(codes('LicenseRejectedError')).toEqual([...REJECTION_CODES]);
    expect(codes('VerificationError')).toEqual(expect.arrayContaining(['TokenMissing', 'WrongIssuer', 'WrongProduct', 'ClockRollback']));
    expect(codes('NetworkError')).toEqual(['NetworkError', 'Timeout']);
    expect(codes('KeyforgeError')).toEqual(expect.arrayContaining(['LeaseLapsed', 'MachineIdUnavailable', 'UsageQueueFull', 'FileWriteFailed']));
    // Each native SDK's rows too, under its own class (or, for Go, Kind).
    for (const native of errorLists().sdks.slice(1)) {
      expect(page).toContain(`### ${native.sdk}`);
      for (const { className, code } of native.errors) expect(page, `${native.sdk} ${code}`).toMatch(new RegExp(`^\\| \`${className}\` \\| \`${code}\``, 'm'));
    }
  });

  it('fails, naming the code, when a code has no guidance', () => {
    const lists = errorLists();
    expect(() => renderErrorsPage({ ...lists, rejections: [...lists.rejections, 'LicenseMelted'] })).toThrow(/no guidance for LicenseMelted/);
    expect(() => renderErrorsPage({ ...lists, httpErrors: { ...lists.httpErrors, PaymentRequired: 402 } })).toThrow(/no guidance for PaymentRequired/);
    const { TokenExpired: _dropped, ...withoutOne } = ERROR_GUIDANCE;
    expect(() => renderErrorsPage(lists, withoutOne)).toThrow(/no guidance for TokenExpired/);
    expect(() => renderErrorsPage(lists, { ...ERROR_GUIDANCE, SeatsExhausted: { means: 'x', action: ' ' } })).toThrow(/no guidance for SeatsExhausted/);
    // A native SDK's list goes through the same check.
    expect(() => renderErrorsPage({ ...lists, sdks: [...lists.sdks, { sdk: 'Go SDK', source: 'sdks/go/errors.go', errors: [{ className: 'Error', code: 'GoOnlyCode' }] }] })).toThrow(/no guidance for GoOnlyCode/);
  });

  it('fails when guidance names a code no list has (a removed or renamed code)', () => {
    expect(() => renderErrorsPage(errorLists(), { ...ERROR_GUIDANCE, SeatsGone: { means: 'x', action: 'y' } })).toThrow(/no list has any more: SeatsGone/);
  });

  it('reads a new SDK code from the SDK source without anyone listing it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-sdk-codes-'));
    try {
      const errors = readFileSync(path.resolve('sdk/src/errors.ts'), 'utf8').replace("| 'ArtifactIntegrity';", "| 'ArtifactIntegrity'\n  /** new */\n  | 'LicenseFileMissing';");
      writeFileSync(path.join(dir, 'errors.ts'), errors);
      writeFileSync(path.join(dir, 'extra.ts'), "throw new KeyforgeError('StoreLocked', 'the store is locked');\n");
      const sdk = typescriptSdkErrors(dir);
      expect(sdk.errors).toContainEqual({ className: 'VerificationError', code: 'LicenseFileMissing' });
      expect(sdk.errors).toContainEqual({ className: 'KeyforgeError', code: 'StoreLocked' });
      expect(() => renderErrorsPage({ ...errorLists(), sdks: [sdk] })).toThrow(/no guidance for LicenseFileMissing, StoreLocked/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(codeTypes("export type ACode = /** a */ 'A' | 'B'; // 'C'\nexport type Other = string;")).toEqual(new Map([['ACode', ['A', 'B']]]));
  });

  it('reads the .NET SDK\'s codes by exception, the TypeScript SDK\'s codes and no others', () => {
    const dotnet = dotnetSdkErrors();
    const byClass = (className: string) => dotnet.errors.filter((error) => error.className === className).map((error) => error.code);
    expect(byClass('LicenseRejectedException')).toContain('SeatsExhausted');
    expect(byClass('VerificationException')).toContain('ClockRollback');
    expect(byClass('NetworkException')).toEqual(['NetworkError', 'Timeout']);
    expect(byClass('KeyforgeException')).toEqual(expect.arrayContaining(['LeaseLapsed', 'UsageQueueFull']));
    expect(new Set(dotnet.errors.map((error) => error.code))).toEqual(new Set(typescriptSdkErrors().errors.map((error) => error.code)));
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-dotnet-codes-'));
    try {
      writeFileSync(path.join(dir, 'Errors.cs'), readFileSync(path.resolve('sdks/dotnet/src/Keyforge/Errors.cs'), 'utf8').replace('public const string Timeout = "Timeout";', 'public const string Timeout = "Timeout";\n        public const string ProxyRefused = "ProxyRefused";'));
      writeFileSync(path.join(dir, 'Extra.cs'), 'throw new KeyforgeException("StoreLocked", "the store is locked");\n');
      const sdk = dotnetSdkErrors(dir);
      expect(sdk.errors).toContainEqual({ className: 'NetworkException', code: 'ProxyRefused' });
      expect(sdk.errors).toContainEqual({ className: 'KeyforgeException', code: 'StoreLocked' });
      expect(() => renderErrorsPage({ ...errorLists(), sdks: [sdk] })).toThrow(/no guidance for ProxyRefused, StoreLocked/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the Go SDK\'s codes by Kind, each one of the TypeScript SDK\'s codes', () => {
    const go = goSdkErrors();
    const byKind = (kind: string) => go.errors.filter((error) => error.className === kind).map((error) => error.code);
    expect(new Set(byKind('KindRejected'))).toEqual(new Set(REJECTION_CODES));
    expect(byKind('KindAPI')).toEqual(expect.arrayContaining(['InvalidRequest', 'RateLimited', 'InvalidResponse']));
    expect(byKind('KindNetwork')).toEqual(['NetworkError', 'Timeout']);
    expect(byKind('KindVerification')).toEqual(expect.arrayContaining(['TokenExpired', 'ClockRollback', 'ArtifactIntegrity']));
    expect(byKind('KindSession')).toEqual(['LeaseLapsed']);
    expect(byKind('KindLocal')).toEqual(expect.arrayContaining(['MachineIdUnavailable', 'UsageQueueFull']));
    const typescript = new Set(typescriptSdkErrors().errors.map((error) => error.code));
    expect(go.errors.map((error) => error.code).filter((code) => !typescript.has(code))).toEqual([]);
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-go-codes-'));
    try {
      writeFileSync(path.join(dir, 'errors.go'), readFileSync(path.resolve('sdks/go/errors.go'), 'utf8').replace('CodeTimeout      = "Timeout"', 'CodeTimeout      = "Timeout"\n\tCodeProxyRefused = "ProxyRefused"'));
      writeFileSync(path.join(dir, 'store.go'), 'package keyforge\n\nvar locked = &Error{Code: "StoreLocked", Kind: KindLocal, Message: "the store is locked"}\n');
      const sdk = goSdkErrors(dir);
      expect(sdk.errors).toContainEqual({ className: 'KindNetwork', code: 'ProxyRefused' });
      expect(sdk.errors).toContainEqual({ className: 'KindLocal', code: 'StoreLocked' });
      expect(() => renderErrorsPage({ ...errorLists(), sdks: [sdk] })).toThrow(/no guidance for ProxyRefused, StoreLocked/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is not stale (run `pnpm docs:generate` after adding a code or its guidance)', () => {
    expect(readFileSync(ERRORS_PAGE, 'utf8')).toBe(renderErrorsPage());
  });
});
