import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestApp, type TestApp } from './harness.js';
import { hostileString, hostileValue, spliced } from './hostile.js';

/** Runs per GraphQL operation; FUZZ_GRAPHQL_RUNS overrides (default 2,000). */
export const GRAPHQL_RUNS = Number(process.env.FUZZ_GRAPHQL_RUNS ?? 2_000);
/** Per test: thousands of in-process requests on a shared machine take minutes, not the default 60 s. */
export const FUZZ_TIMEOUT_MS = 900_000;

/** An admin with a product and a floating license: the ids hostile variables are mixed with. */
export async function seedFuzzTarget(t: TestApp) {
  const admin = await t.setupAdmin();
  const product = await t.seedProduct(admin.user.tenantId);
  const { license } = await t.seedLicense(admin.user.tenantId, product.id, { floatingSeats: 2 });
  return { auth: { token: admin.token }, admin, product, license };
}

export type FuzzTarget = { t: TestApp } & Awaited<ReturnType<typeof seedFuzzTarget>>;

/**
 * A fuzz suite's app and target, started in beforeAll (then `ready`, for what the suite derives from them) and closed
 * in afterAll; the returned object is filled in by then.
 */
export function useFuzzTarget(ready?: (fuzz: FuzzTarget) => unknown) {
  const fuzz = {} as FuzzTarget;
  beforeAll(async () => {
    // Warnings and errors only: thousands of requests' debug lines cost a tenth of the run and no fuzz test reads them.
    fuzz.t = await startTestApp({ env: { LOG_LEVEL: 'warn' } });
    Object.assign(fuzz, await seedFuzzTarget(fuzz.t));
    await ready?.(fuzz);
  });
  afterAll(async () => {
    await fuzz.t?.close();
  });
  return fuzz;
}

export type VarKind = 'id' | 'string' | 'int' | 'bool' | 'date' | 'json' | readonly string[] | fc.Arbitrary<unknown> | { [field: string]: VarKind };

const uuid = fc.uuid();
/** A value of the declared kind, mostly valid-looking, often hostile. */
export function valueOf(kind: VarKind, ids: string[]): fc.Arbitrary<unknown> {
  const valid: fc.Arbitrary<unknown> =
    kind instanceof fc.Arbitrary ? kind
    : kind === 'id' ? fc.oneof(fc.constantFrom(...ids), uuid, spliced, hostileString)
    : kind === 'string' ? fc.oneof(fc.string({ maxLength: 40 }), spliced, hostileString)
    : kind === 'int' ? fc.oneof(fc.integer({ min: -5, max: 200 }), fc.integer(), fc.double())
    : kind === 'bool' ? fc.boolean()
    : kind === 'date' ? fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), spliced)
    : kind === 'json' ? hostileValue
    : Array.isArray(kind) ? fc.oneof(fc.constantFrom(...(kind as string[])), spliced)
    : fc.record(Object.fromEntries(Object.entries(kind as { [field: string]: VarKind }).map(([field, k]) => [field, valueOf(k as VarKind, ids)])), { requiredKeys: [] });
  return fc.oneof({ arbitrary: valid, weight: 5 }, { arbitrary: hostileValue, weight: 1 });
}

export interface Operation {
  name: string;
  query: string;
  variables: Record<string, VarKind>;
}

/** Bodies sent at once: the server's database round trips overlap, so thousands of bodies take a fraction of the time. */
const FUZZ_CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 4);

/** How a fuzzer sends one body: the management endpoint (t.gql) unless given, e.g. the customer portal's. */
export type GraphQLSender = (query: string, variables: Record<string, unknown>) => Promise<{ status: number; text: string; errors?: { extensions?: { code?: string } }[] }>;

/**
 * Hostile variables for `op`; no answer may be a 5xx or carry an InternalError. `send` replaces the management
 * endpoint; `concurrency` the bodies sent at once (an operation that answers no sooner than a floor takes more).
 */
export async function fuzzOperation(t: TestApp, auth: { token: string }, op: Operation, ids: () => string[], options: { send?: GraphQLSender; concurrency?: number } = {}) {
  const variables = fc.record(Object.fromEntries(Object.entries(op.variables).map(([name, kind]) => [name, valueOf(kind, ids())])), { requiredKeys: [] });
  const send: GraphQLSender = options.send ?? (async (query, vars) => {
    const response = await t.postLean('/api/graphql', JSON.stringify({ query, variables: vars }), { authorization: `Bearer ${auth.token}` });
    return { ...response, errors: response.json?.errors };
  });
  const concurrency = options.concurrency ?? FUZZ_CONCURRENCY;
  const check = async (vars: unknown) => {
    const response = await send(op.query, vars as Record<string, unknown>);
    const failed = response.status >= 500 || (response.errors ?? []).some((error) => error.extensions?.code === 'InternalError');
    // On a failure, the server's own account of it (the unhandled error it logged), which the answer never carries.
    const logged = failed ? t.logs.join('').split('\n').filter((line) => line.includes('unhandled error')).slice(-2).map((line) => line.slice(0, 1500)).join('\n') : '';
    const detail = `${op.name} ${JSON.stringify(vars).slice(0, 300)} → ${response.text.slice(0, 300)}${logged ? `\nserver log:\n${logged}` : ''}`;
    expect(response.status, detail).toBeLessThan(500);
    for (const error of response.errors ?? []) expect(error.extensions?.code, detail).not.toBe('InternalError');
  };
  // GRAPHQL_RUNS bodies in all, FUZZ_CONCURRENCY per run (a failing batch still shrinks to its smallest body).
  await fc.assert(
    fc.asyncProperty(fc.array(variables, { minLength: concurrency, maxLength: concurrency }), async (batch) => {
      await Promise.all(batch.map(check));
    }),
    { numRuns: Math.ceil(GRAPHQL_RUNS / concurrency) },
  );
}
