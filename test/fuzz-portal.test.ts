import { afterAll, beforeAll, describe, it } from 'vitest';
import { FUZZ_TIMEOUT_MS, fuzzOperation, type GraphQLSender, type Operation } from './support/fuzz-graphql.js';
import { startTestApp, type TestApp } from './support/harness.js';

// Every operation of the customer portal's GraphQL endpoint (/portal/<handle>/graphql), hostile variables, as a
// signed-in customer (so they reach the services): no 5xx, no InternalError.

let t: TestApp;
let ids: string[] = [];
let send: GraphQLSender;

beforeAll(async () => {
  // Sign-in budgets out of the way: the fuzzer sends thousands of sign-in steps from one address.
  t = await startTestApp({ env: { RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '1000000', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '1000000' } });
  const tenant = await t.seedTenant({ name: 'Acme', keyPrefix: 'ACME' });
  await t.prisma.tenant.update({ where: { id: tenant.id }, data: { portalHandle: 'acme' } });
  const product = await t.seedProduct(tenant.id);
  await t.prisma.product.update({ where: { id: product.id }, data: { deviceFreeLimit: 1000 } });
  const { key, license } = await t.seedLicense(tenant.id, product.id, { customerEmail: 'pat@customer.test', maxActivations: 50 });
  for (let i = 0; i < 5; i++) await t.activate({ licenseKey: key, deviceId: `dev-${i}` });
  const devices = await t.prisma.activation.findMany({ where: { licenseId: license.id }, select: { id: true } });
  // A bundle license too: the downloads list and links resolve its members.
  await t.seedProduct(tenant.id, 'Acme Extra');
  const suite = await t.seedProduct(tenant.id, 'Acme Suite', [product.name, 'Acme Extra']);
  const bundle = (await t.seedLicense(tenant.id, suite.id, { customerEmail: 'pat@customer.test' })).license;
  ids = [license.id, bundle.id, ...devices.map((device) => device.id)];
  await t.post('/portal/acme/graphql', { query: 'mutation { requestSignInLink(input: { email: "pat@customer.test" }) { email } }' });
  const row = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'portal-sign-in' } });
  const signIn = await t.post('/portal/acme/graphql', { query: 'mutation($t: String!) { signIn(input: { token: $t }) { customer { email } } }', variables: { t: t.outboxToken(row) } });
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  send = async (query, variables) => {
    const response = await t.post('/portal/acme/graphql', { query, variables }, { cookie });
    return { status: response.status, text: response.text, errors: response.json?.errors };
  };
}, 120_000);
afterAll(() => t?.close());

const operations: (Operation & { concurrency?: number })[] = [
  // Answers no sooner than 400 ms (known address or not): more bodies at once.
  { name: 'requestSignInLink', query: 'mutation($input: RequestSignInLinkInput!) { requestSignInLink(input: $input) { email } }', variables: { input: { email: 'string' } }, concurrency: 25 },
  { name: 'signIn', query: 'mutation($input: SignInInput!) { signIn(input: $input) { customer { email } } }', variables: { input: { token: 'string' } } },
  { name: 'freeDevice', query: 'mutation($input: FreeDeviceInput!) { freeDevice(input: $input) { license { id } } }', variables: { input: { id: 'id' } } },
  { name: 'confirmLicenseKey', query: 'mutation($input: ConfirmLicenseKeyInput!) { confirmLicenseKey(input: $input) { matches } }', variables: { input: { licenseId: 'id', key: 'string' } } },
  { name: 'downloadLicenseFile', query: 'mutation($input: DownloadLicenseFileInput!) { downloadLicenseFile(input: $input) { licenseFile } }', variables: { input: { licenseId: 'id', deviceId: 'id', key: 'string' } } },
  { name: 'uploadActivationRequest', query: 'mutation($input: UploadActivationRequestInput!) { uploadActivationRequest(input: $input) { licenseFile } }', variables: { input: { licenseId: 'id', request: 'string', key: 'string' } } },
  { name: 'uploadDeactivationProof', query: 'mutation($input: UploadDeactivationProofInput!) { uploadDeactivationProof(input: $input) { license { id } } }', variables: { input: { licenseId: 'id', proof: 'string' } } },
  { name: 'downloads', query: 'query($channel: ReleaseChannel) { downloads(channel: $channel) { licenseId products { productId releases { id channel } } } }', variables: { channel: ['STABLE', 'RC', 'BETA', 'ALPHA', 'DEV'] } },
  // Last: it may end the session the others use.
  { name: 'downloadArtifact', query: 'mutation($input: DownloadArtifactInput!) { downloadArtifact(input: $input) { url } }', variables: { input: { licenseId: 'id', artifactId: 'id' } } },
  { name: 'signOut', query: 'mutation($input: SignOutInput!) { signOut(input: $input) { sessionsEnded } }', variables: { input: { everywhere: 'bool' } } },
];

describe('fuzz: customer portal GraphQL', () => {
  for (const op of operations) {
    it(op.name, { timeout: FUZZ_TIMEOUT_MS }, () => fuzzOperation(t, { token: '' }, op, () => ids, { send, concurrency: op.concurrency }));
  }
});
