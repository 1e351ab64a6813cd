import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { KEY_PREFIX_PATTERN, normalizeLicenseKey } from '../server/src/crypto/license-key.js';
import { withoutSuggestions } from '../server/src/graphql/handler.js';
import { NOT_CONSOLE } from '../server/src/http/console.js';
import { bearerTokenOf } from '../server/src/http/middleware/auth.js';
import { maskCredentials, refuseCredentialsIn } from '../server/src/http/middleware/credentials-in-url.js';
import { QUIET_PATHS } from '../server/src/http/middleware/logging.js';
import { requestIdOf } from '../server/src/http/middleware/request-id.js';
import { metricsAuthorized } from '../server/src/metrics/index.js';
import { sessionTokenOf } from '../server/src/rest/v1/float-heartbeat.js';
import { MeterRequest } from '../server/src/rest/v1/meter.js';
import { findCheckpointTokens } from '../server/src/services/audit/checkpoints.js';
import { readArmor } from '../server/src/services/license-files/armor.js';
import { backupCodeText } from '../server/src/services/auth/mfa.js';
import { EmailSchema } from '../server/src/services/auth/passwords.js';
import { CustomerContactSchema } from '../server/src/services/company.js';
import { SESSION_TOKEN_PATTERN } from '../server/src/services/floating/sessions.js';
import { date, headerName, list } from '../server/src/services/licenses/import.js';
import { likeLiteral } from '../server/src/services/licenses/management.js';
import { EVENT_NAME_PATTERN } from '../server/src/services/metering/periods.js';
import { redactSingleUseTokens } from '../server/src/services/notifications/outbox.js';
import { findUnstorableString } from '../server/src/services/validation.js';
import { WebhookUrl } from '../server/src/services/webhooks/endpoints.js';

// Every text a caller sends that meets a regular expression in server/src, through the function that applies it, on
// the inputs that make a backtracking pattern slow (long runs of what a quantifier takes, followed by what makes the
// match fail). Linear means: four times the input costs at most six times the time. Each size is timed in CPU time
// over enough repetitions to take milliseconds, in alternating rounds, and the fastest round counts, so a busy machine
// slows a run but does not fail the test. A quadratic scan costs sixteen times as much (`/eyJ[…]{10,}\.eyJ…/g` over a run of `eyJ`: 30 s on
// 60,000 characters).

interface Case {
  name: string;
  /** The hostile text of about `size` characters. */
  input: (size: number) => string;
  run: (text: string) => unknown;
  /** Characters of the smaller input (default 20,000). */
  size?: number;
}

const quietly = (run: (text: string) => unknown) => (text: string) => {
  try {
    return run(text);
  } catch (error) {
    return error;
  }
};
const armored = (body: string) => `-----BEGIN KEYFORGE LICENSE FILE-----\n${body}\n-----END KEYFORGE LICENSE FILE-----\n`;
const repeat = (unit: string, size: number) => unit.repeat(Math.max(1, Math.floor(size / unit.length)));
const meter = (fields: object) => MeterRequest.safeParse({ licenseKey: 'ACME-AAAA-BBBB-CCCC-DDDD', event: 'api.calls', quantity: 1, ...fields });
const call = (authorization: string) => ({ body: {}, clientIp: '127.0.0.1', header: (name: string) => (name === 'authorization' ? authorization : undefined) });

const CASES: Case[] = [
  // Audit: activityLogVerification(checkpoints), `pnpm cli audit:check --checkpoints`.
  { name: 'checkpoint scan: eyJ repeated', size: 10_000, input: (n) => repeat('eyJ', n), run: (text) => findCheckpointTokens(text, 500) },
  { name: 'checkpoint scan: header-like segments and dots', size: 10_000, input: (n) => repeat('eyJAAAAAAAAAAAA.', n), run: (text) => findCheckpointTokens(text, 500) },
  { name: 'checkpoint scan: two segments, a short third', size: 10_000, input: (n) => repeat('eyJAAAAAAAAAAAA.eyJAAAAAAAAAAAA.x ', n), run: (text) => findCheckpointTokens(text, 500) },
  // Licensing API and management: license keys (validate, activate, search), credentials in URLs.
  { name: 'license key normalisation: spaces', input: (n) => `A${repeat(' ', n)}!`, run: normalizeLicenseKey },
  { name: 'license key normalisation: groups', input: (n) => repeat('A-AAAA', n), run: normalizeLicenseKey },
  { name: 'credentials in a URL: key-like groups', input: (n) => `/api/v1/${repeat('AB-CDEF', n)}`, run: maskCredentials },
  { name: 'credentials in a URL: session-token-like', input: (n) => `/x/${repeat('kfs_', n)}`, run: quietly((text) => refuseCredentialsIn(text, `?q=${text}`)) },
  { name: 'credentials in a URL: long token run', input: (n) => `/x/kfs_${repeat('a', n)}`, run: maskCredentials },
  { name: 'floating session token pattern', input: (n) => `kfs_${repeat('a', n)}`, run: (text) => SESSION_TOKEN_PATTERN.test(text) },
  { name: 'management search: LIKE escaping', input: (n) => repeat('%_\\a', n), run: likeLiteral },
  // Headers.
  { name: 'Authorization: Bearer (management)', input: (n) => `Bearer ${repeat(' ', n)}x y`, run: bearerTokenOf },
  { name: 'Authorization: Bearer (management), token run', input: (n) => `Bearer ${repeat('x', n)} y`, run: bearerTokenOf },
  { name: 'Authorization: Bearer (floating session)', input: (n) => `Bearer ${repeat(' ', n)}x y`, run: quietly((text) => sessionTokenOf(call(text))) },
  { name: 'Authorization: Bearer (floating session), trailing spaces', input: (n) => `Bearer x${repeat(' ', n)}y`, run: quietly((text) => sessionTokenOf(call(text))) },
  { name: 'Authorization: Bearer (metrics)', input: (n) => `Bearer ${repeat('x', n)}\n`, run: (text) => metricsAuthorized('token', text) },
  { name: 'X-Request-Id', input: (n) => `${repeat('a', n)}!`, run: requestIdOf },
  // Paths.
  { name: 'console fallback path', input: (n) => `/${repeat('api', n)}`, run: (text) => NOT_CONSOLE.test(text) },
  { name: 'quiet log paths', input: (n) => `/${repeat('healthz', n)}`, run: (text) => QUIET_PATHS.test(text) },
  // Accounts: emails (sign-in, invitations, transfers, activation's userEmail, company contact), backup codes.
  { name: 'email: local part without @', input: (n) => repeat('a', n), run: (text) => EmailSchema.safeParse(text) },
  { name: 'email: many labels, bad last label', input: (n) => `a@${repeat('a.', n)}1`, run: (text) => EmailSchema.safeParse(text) },
  { name: 'email: dots in the local part', input: (n) => `${repeat('a.', n)}@`, run: (text) => EmailSchema.safeParse(text) },
  { name: 'company contact: renewal URL', input: (n) => `https://${repeat('a', n)} x`, run: (text) => CustomerContactSchema.safeParse({ renewalUrl: text }) },
  { name: 'company contact: support email', input: (n) => `${repeat('a.', n)}@`, run: (text) => CustomerContactSchema.safeParse({ supportEmail: text }) },
  { name: 'backup code', input: (n) => repeat(' -a', n), run: backupCodeText },
  // Webhooks, metering, storage checks.
  { name: 'webhook URL', input: (n) => `https://${repeat('a.', n)}/`, run: (text) => WebhookUrl.safeParse(text) },
  { name: 'meter event name: long word', input: (n) => `${repeat('a', n)}!`, run: (text) => EVENT_NAME_PATTERN.test(text) },
  { name: 'meter event name: many words', input: (n) => `a${repeat('.a', n)}!`, run: (text) => meter({ event: text }) },
  { name: 'meter timestamp (ISO 8601)', input: (n) => `2027-01-01T00:00:00.${repeat('0', n)}Z`, run: (text) => meter({ timestamp: text }) },
  { name: 'unstorable strings (lone surrogates, NUL)', input: (n) => `${repeat('\ud800a', n)}`, run: findUnstorableString },
  { name: 'tenant key prefix', input: (n) => repeat('A', n), run: (text) => KEY_PREFIX_PATTERN.test(text) },
  // License CSV import cells and header.
  { name: 'import: date cell', input: (n) => `2027-01-01T00:00${repeat('0', n)}`, run: date },
  { name: 'import: date cell with a zone-like tail', input: (n) => `2027-01-01 00:00${repeat('+00', n)}`, run: date },
  // Smaller: at 80,000 characters the 50,000 items the split makes cost garbage collection, not matching.
  { name: 'import: list cell', input: (n) => repeat('a;,', n), run: list, size: 2_000 },
  { name: 'import: header name', input: (n) => `custom.${repeat(' -', n)}x`, run: headerName },
  // Email bodies (previews redact single-use tokens; bodies hold names and addresses callers chose).
  { name: 'email preview: single-use token redaction', input: (n) => repeat('kfr_', n), run: redactSingleUseTokens },
  { name: 'email preview: a long token', input: (n) => `kfi_${repeat('a', n)}`, run: redactSingleUseTokens },
  // Armored text (license files, activation requests, deactivation proofs), within its 16,384-character limit.
  { name: 'armored text: a line of spaces, no quote marker', input: (n) => armored(`${repeat(' \t', n)}x`), run: quietly((text) => readArmor('LICENSE FILE', text, 'file')), size: 2_000 },
  { name: 'armored text: quote markers', input: (n) => armored(`${repeat('> ', n)}x`), run: quietly((text) => readArmor('LICENSE FILE', text, 'file')), size: 2_000 },
  { name: 'armored text: base64 then a stray character', input: (n) => armored(`${repeat('AAAA', n)}!`), run: quietly((text) => readArmor('LICENSE FILE', text, 'file')), size: 2_000 },
  { name: 'armored text: BEGIN lines of another label', input: (n) => repeat('-----BEGIN KEYFORGE X', n), run: quietly((text) => readArmor('LICENSE FILE', text, 'file')), size: 2_000 },
  // GraphQL validation messages quote the caller's field names.
  { name: 'GraphQL suggestions stripped', input: (n) => `Cannot query field "${repeat('Did you mea', n)}". Did you mean "x"?`, run: withoutSuggestions },
];

/** Milliseconds of CPU `repetitions` calls take (CPU time: the time the process was not scheduled does not count). */
function timed(run: (text: string) => unknown, text: string, repetitions: number): number {
  const started = process.cpuUsage();
  for (let i = 0; i < repetitions; i += 1) run(text);
  const { user, system } = process.cpuUsage(started);
  return (user + system) / 1000;
}

/** time(4 × size) / time(size): the fastest of four alternating rounds of each, each round 10 ms or more. */
function growth({ input, run }: Case, size: number): number {
  const small = input(size);
  const large = input(size * 4);
  for (let i = 0; i < 3; i += 1) run(small), run(large); // warm up (JIT) before timing
  let repetitions = 1;
  while (timed(run, small, repetitions) < 10 && repetitions < 1 << 16) repetitions *= 2;
  let [fastSmall, fastLarge] = [Infinity, Infinity];
  for (let round = 0; round < 4; round += 1) {
    fastSmall = Math.min(fastSmall, timed(run, small, repetitions));
    fastLarge = Math.min(fastLarge, timed(run, large, repetitions));
    if (fastLarge > 1000) break; // a second per call: slow enough to show without more rounds
  }
  return fastLarge / fastSmall;
}

describe('every regular expression that meets request input runs in linear time', () => {
  it.each(CASES)('$name: 4x the input, at most 6x the time', (testCase) => {
    // Up to three measurements, the lowest counts: another process's burst can spoil one, not a quadratic cost.
    const ratios: number[] = [];
    for (let attempt = 0; attempt < 3 && !(Math.min(...ratios) <= 6); attempt += 1) ratios.push(growth(testCase, testCase.size ?? 20_000));
    expect(Math.min(...ratios), `time(4x input) / time(input): ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')}`).toBeLessThanOrEqual(6);
  });
});

describe('the checkpoint scan', () => {
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const checkpoint = (seq: number) => `${b64({ alg: 'EdDSA', kid: 'k1', typ: 'JWT' })}.${b64({ kind: 'keyforge-audit-checkpoint', tid: 't1', seq, iat: 1_800_000_000 })}.${'s'.repeat(86)}`;

  it('finds checkpoints in files, webhook payloads, log lines and escaped JSON, once each, and nothing else', () => {
    const [one, two, three] = [checkpoint(1), checkpoint(2), checkpoint(3)];
    const text = [
      JSON.stringify({ checkpoint: one, keys: [] }),
      `{"level":30,"msg":"activity log checkpoint","checkpoint":"${two}"}`,
      `{"log":"kept:\\n${three}\\n"}`, // log lines inside a JSON string: an escaped \n right before the token
      `${one}.${two}`, // two tokens joined by a dot
      `eyJ${'A'.repeat(20)}.eyJ${'A'.repeat(20)}.${'x'.repeat(30)}`, // a JWS that is not a checkpoint
      'eyJ'.repeat(1000),
    ].join('\n');
    expect(findCheckpointTokens(text).sort()).toEqual([one, two, three].sort());
    expect(findCheckpointTokens(`x${three}`)).toEqual([three]);
    expect(findCheckpointTokens(text, 2)).toHaveLength(2);
  });
});
