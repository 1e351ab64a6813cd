// The TypeScript SDK's scenario runner (sdks/conformance/README.md "Scenario runner protocol"): reads the run's
// input on stdin, drives the SDK (sdk/src) through the scenario named on the command line, and prints one line,
// {"steps":[…]}. test/sdk-conformance.test.ts runs it as `node --import tsx sdks/conformance/runner.ts <scenario>`.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { KeyforgeClient, KeyforgeError, type Artifact, type FloatingSession } from '../../sdk/src/index.js';
import { downloadArtifactToFile, FileStore } from '../../sdk/src/node.js';

interface Input {
  scenario: string;
  server: string;
  issuer: string;
  product: string;
  control: string;
  storeDir: string;
  licenseKey: string;
  [input: string]: unknown;
}

type Step = { name: string; ok: true; value: Record<string, unknown> } | { name: string; ok: false; error: string };

const input = JSON.parse(await readStdin()) as Input;
const scenario = process.argv[2];
const steps: Step[] = [];
/** Added to the wall clock once the control server has moved the run's clock (advanceClock). */
let clockOffsetMs = 0;
const clock = () => Date.now() + clockOffsetMs;

function client(baseUrl = input.server, store = 'store.json') {
  return new KeyforgeClient({ baseUrl, product: input.product, issuer: input.issuer, store: new FileStore(path.join(input.storeDir, store)), clock });
}
const sdk = client();
const licenseKey = input.licenseKey;
const text = (name: string) => String(input[name]);

/** Runs one step: its value, or the SDK error's code. Anything else is a crash (non-zero exit). */
async function step(name: string, run: () => Promise<Record<string, unknown>>): Promise<void> {
  try {
    steps.push({ name, ok: true, value: await run() });
  } catch (error) {
    if (!(error instanceof KeyforgeError)) throw error;
    steps.push({ name, ok: false, error: error.code });
  }
}

async function control(action: string, body: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(`${input.control}/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200) throw new Error(`control ${action}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** A control answer as a step: `{deactivated:false, error}` style answers are refusals. */
async function controlStep(name: string, action: string, body: Record<string, unknown> = {}) {
  const answer = await control(action, body);
  steps.push(typeof answer.error === 'string' ? { name, ok: false, error: answer.error } : { name, ok: true, value: answer });
}

const scenarios: Record<string, () => Promise<void>> = {
  async activate() {
    const activate = (deviceId: string) => async () => ({ remainingActivations: (await sdk.activate({ licenseKey, deviceId })).remainingActivations });
    await step('activate', activate(text('deviceId')));
    await step('activateAgain', activate(text('deviceId')));
    await step('activateOther', activate(text('otherDeviceId')));
    await step('activateThird', activate(text('thirdDeviceId')));
    const deactivate = async () => ({ remainingActivations: (await sdk.deactivate({ licenseKey, deviceId: text('otherDeviceId') })).remainingActivations });
    await step('deactivateOther', deactivate);
    await step('deactivateOtherAgain', deactivate);
    await controlStep('seats', 'seats');
  },

  async validate() {
    const deviceId = text('deviceId');
    await step('activate', async () => ({ remainingActivations: (await sdk.activate({ licenseKey, deviceId })).remainingActivations }));
    await step('validate', async () => {
      const { entitlement } = await sdk.validate({ licenseKey });
      return { product: entitlement.product, features: entitlement.features, device: entitlement.device, deviceActivated: entitlement.deviceActivated, offlineGraceDays: entitlement.offlineGraceDays };
    });
    await step('validateDevice', async () => {
      const { entitlement } = await sdk.validate({ licenseKey, deviceId, requireActivation: true });
      return { device: entitlement.device, deviceActivated: entitlement.deviceActivated };
    });
    await step('validateOtherDevice', async () => {
      await sdk.validate({ licenseKey, deviceId: text('otherDeviceId'), requireActivation: true });
      return {};
    });
    await step('validateUnknownKey', async () => {
      await sdk.validate({ licenseKey: text('unknownKey') });
      return {};
    });
    // Through the control server's replaying proxy: the second validate gets the first one's answer again.
    const replayed = client(`${input.control}/replay`, 'replay.json');
    const viaReplay = async () => ({ product: (await replayed.validate({ licenseKey })).entitlement.product });
    await step('validateReplayFirst', viaReplay);
    await step('validateReplayed', viaReplay);
  },

  async 'revoke-offline'() {
    const deviceId = text('deviceId');
    const offline = async () => ({ source: (await sdk.validateOffline({ licenseKey, deviceId, requireActivation: true })).source });
    await step('activate', async () => ({ remainingActivations: (await sdk.activate({ licenseKey, deviceId })).remainingActivations }));
    await step('validate', async () => ({ offlineGraceDays: (await sdk.validate({ licenseKey, deviceId, requireActivation: true })).entitlement.offlineGraceDays }));
    await control('revoke');
    await step('validateOfflineRevoked', offline);
    const { now } = (await control('advanceClock', { seconds: input.advanceSeconds })) as { now: number };
    clockOffsetMs = now * 1000 - Date.now();
    await step('validateOfflineExpired', offline);
    await step('validateOnline', async () => {
      await sdk.validate({ licenseKey, deviceId, requireActivation: true });
      return {};
    });
    await step('validateOfflineAfterRejection', offline);
  },

  async watch() {
    const deviceId = text('deviceId');
    await step('activate', async () => ({ remainingActivations: (await sdk.activate({ licenseKey, deviceId })).remainingActivations }));
    let changes = 0;
    // An hour between checks: every check here is one the scenario asks for.
    const watcher = sdk.watch({ licenseKey, deviceId, intervalSeconds: 3600, onChange: () => (changes += 1) });
    const found = async () => {
      const state = await watcher.check();
      return { status: state.status, source: state.source, features: [...state.features].sort(), code: state.code, changes };
    };
    await step('watchFirst', found);
    await control('setFeatures', { features: input.features });
    await step('watchFeaturesChanged', found);
    await step('watchUnchanged', found);
    await control('revoke');
    await step('watchRevoked', found);
    watcher.stop();
    await step('watchStopped', async () => ({ active: watcher.active }));
  },

  async 'wrong-product'() {
    const deviceId = text('deviceId');
    await step('activate', async () => {
      await sdk.activate({ licenseKey, deviceId });
      return {};
    });
    await step('checkout', async () => {
      await (await sdk.checkout({ licenseKey, deviceId })).checkin();
      return {};
    });
    await step('validate', async () => {
      await sdk.validate({ licenseKey });
      return {};
    });
    await controlStep('seats', 'seats');
  },

  async floating() {
    const sessions: Record<string, FloatingSession> = {};
    const checkout = (name: string, deviceId: string) => async () => {
      const session = await sdk.checkout({ licenseKey, deviceId });
      sessions[name] = session;
      return { floatingSeats: session.floatingSeats, remainingFloatingSeats: session.remainingFloatingSeats };
    };
    const checkin = (name: string) => async () => ({ checkedIn: (await sessions[name].checkin()).checkedIn });
    await step('checkoutA', checkout('A', text('deviceA')));
    await step('checkoutB', checkout('B', text('deviceB')));
    await step('checkoutC', checkout('C', text('deviceC')));
    await step('checkinA', checkin('A'));
    await step('checkoutCAgain', checkout('C', text('deviceC')));
    await step('heartbeatC', async () => {
      await sessions.C.heartbeat();
      return {};
    });
    await controlStep('seats', 'seats');
    await step('checkinB', checkin('B'));
    await step('checkinC', checkin('C'));
    await controlStep('seatsAfterCheckin', 'seats');
  },

  async 'air-gapped'() {
    const deviceId = text('deviceId');
    // An air-gapped application ships the server's keys: fetched once here, as a vendor saves them at build time.
    await sdk.fetchKeys();
    let request = '';
    await step('createRequest', async () => {
      ({ request } = await sdk.createActivationRequest({ licenseKey, deviceId, deviceName: text('deviceName'), version: text('version') }));
      const body = request.split('\n').filter((line) => line && !line.startsWith('-----')).join('');
      const fields = JSON.parse(Buffer.from(body, 'base64').toString('utf8')) as Record<string, unknown>;
      return { device: fields.device, product: fields.product };
    });
    const { response } = (await control('airGappedRespond', { request })) as { response: string };
    const apply = async () => {
      const { entitlement } = await sdk.applyActivationResponse(response);
      return { device: entitlement.device, deviceActivated: entitlement.deviceActivated, kind: entitlement.claims.kind };
    };
    const offline = async () => ({ source: (await sdk.validateOffline({ licenseKey, deviceId, requireActivation: true })).source });
    await step('applyResponse', apply);
    await step('applyResponseAgain', apply);
    await step('validateOffline', offline);
    await controlStep('seatsAfterActivation', 'seats');
    let proof = '';
    await step('deactivateOffline', async () => {
      const deactivation = await sdk.deactivateOffline({ licenseKey });
      proof = deactivation.proof;
      return { deviceId: deactivation.deviceId };
    });
    await step('validateOfflineAfterDeactivation', offline);
    await controlStep('uploadProof', 'airGappedDeactivate', { proof });
    await controlStep('uploadProofAgain', 'airGappedDeactivate', { proof });
    await controlStep('seatsAfterDeactivation', 'seats');
  },

  async metering() {
    const event = text('event');
    const meter = (quantity: number, idempotencyKey?: string) => async () => {
      const { total, limit, remaining, replayed } = await sdk.meter({ licenseKey, event, quantity, idempotencyKey });
      return { total, limit, remaining, replayed };
    };
    await step('meter', meter(3, text('idempotencyKey')));
    await step('meterReplayed', meter(3, text('idempotencyKey')));
    await step('meterSecond', meter(2, text('secondIdempotencyKey')));
    await step('meterOverQuota', meter(6));
  },

  async releases() {
    const where = { platform: text('platform'), arch: text('arch') };
    const publish = (version: string, extra: Record<string, unknown> = {}) =>
      control('publishRelease', { version, ...where, filename: `acme-studio-${version}-${where.platform}-${where.arch}.tar.gz`, content: text('artifactContent'), ...extra });
    const check = (currentVersion: string, deviceId?: string) => async () => {
      const { available, reason, release } = await sdk.checkForUpdate({ licenseKey, currentVersion, deviceId, ...where });
      return { available, reason: reason ?? null, version: release?.version ?? null };
    };
    const versions = async () => ({ versions: (await sdk.listReleases({ licenseKey, ...where })).map((release) => release.version) });
    await publish('1.1.0', { requiresMaintenance: true });
    let artifact: Artifact | undefined;
    await step('checkForUpdate', async () => {
      const { available, reason, release } = await sdk.checkForUpdate({ licenseKey, currentVersion: text('currentVersion'), ...where });
      artifact = release?.artifacts[0];
      return { available, reason: reason ?? null, version: release?.version ?? null };
    });
    await step('listReleases', versions);
    await step('activate', async () => ({ remainingActivations: (await sdk.activate({ licenseKey, deviceId: text('deviceId') })).remainingActivations }));
    await step('download', async () => {
      const bytes = await sdk.downloadArtifact(artifact!, { licenseKey, deviceId: text('deviceId') });
      return { filename: artifact!.filename, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    });
    await step('downloadEditedListing', async () => {
      await sdk.downloadArtifact({ ...artifact!, sha256: '0'.repeat(64) }, { licenseKey });
      return {};
    });
    // Into a file of a folder of its own: what is there afterwards (the file, and nothing else left behind).
    const downloads = path.join(input.storeDir, 'downloads');
    await mkdir(downloads, { recursive: true });
    const target = () => path.join(downloads, artifact!.filename);
    const onDisk = async () => {
      const bytes = await readFile(target());
      return { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), leftovers: (await readdir(downloads)).length - 1 };
    };
    await step('downloadToFile', async () => {
      await downloadArtifactToFile(sdk, artifact!, target(), { licenseKey, deviceId: text('deviceId') });
      return onDisk();
    });
    await step('downloadToFileEdited', async () => {
      await downloadArtifactToFile(sdk, { ...artifact!, sha256: '0'.repeat(64) }, target(), { licenseKey, deviceId: text('deviceId') });
      return {};
    });
    // Through the control server's tampering proxy: the file's last byte changed on the way.
    const tampered = client(`${input.control}/tamper`, 'tamper.json');
    await step('downloadToFileTampered', async () => {
      await downloadArtifactToFile(tampered, artifact!, target(), { licenseKey, deviceId: text('deviceId') });
      return {};
    });
    await step('fileKept', onDisk);
    await step('checkOtherDevice', check(text('currentVersion'), text('otherDeviceId')));
    await publish('1.2.0', { requiredFeatures: ['enterprise'] });
    await step('checkFeatureMissing', check('1.1.0'));
    await control('yankRelease', { version: '1.2.0' });
    await step('checkAfterYank', check('1.1.0'));
    await control('lapseMaintenance');
    await step('checkMaintenanceExpired', check(text('currentVersion')));
    await step('listAfterLapse', versions);
  },
};

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const run = scenarios[scenario];
if (!run) throw new Error(`Unknown scenario "${scenario}"`);
await run();
process.stdout.write(`${JSON.stringify({ steps })}\n`);
