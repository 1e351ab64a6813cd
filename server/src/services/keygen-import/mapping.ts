import { canonicalLicenseKey } from '../../crypto/license-key.js';
import { MAX_SEATS } from '../licenses/attributes.js';
import { date, flag, integer, KNOWN_ATTRIBUTES, metadata, text, type KeygenResource, type KeygenType } from './documents.js';
import type { KeygenAccount } from './source.js';

// How a Keygen object becomes a Keyforge one (docs/guide/migrating.md "Mapping" is this file as a table). Pure: it
// reads the account and answers what to write, and every value it cannot carry over as a report note.

/** One line of the report: what was not (or not exactly) carried over, counted over the objects it concerns. */
export interface ImportNote {
  type: KeygenType;
  /** The Keygen attribute or relationship it is about. */
  field: string;
  message: string;
  count: number;
  /** Up to 5 Keygen ids it concerns. */
  examples: string[];
}

export class Notes {
  private readonly notes = new Map<string, ImportNote>();
  add(type: KeygenType, field: string, message: string, id: string) {
    const key = `${type}\u0000${field}\u0000${message}`;
    const note = this.notes.get(key) ?? { type, field, message, count: 0, examples: [] };
    note.count += 1;
    if (note.examples.length < 5) note.examples.push(id);
    this.notes.set(key, note);
  }
  list(): ImportNote[] {
    return [...this.notes.values()];
  }
}

/** What an attribute holds when it means nothing to carry over: such values are not reported. */
const DEFAULTS: Partial<Record<KeygenType, Record<string, unknown>>> = {
  products: { distributionStrategy: 'LICENSED', url: null, platforms: null, code: null },
  policies: {
    usePool: false, maxProcesses: null, maxUsers: null, maxCores: null, maxMemory: null, maxDisk: null, maxUses: null,
    machineUniquenessStrategy: 'UNIQUE_PER_LICENSE', machineMatchingStrategy: 'MATCH_ANY', componentUniquenessStrategy: 'UNIQUE_PER_MACHINE',
    componentMatchingStrategy: 'MATCH_ANY', expirationBasis: 'FROM_CREATION', renewalBasis: 'FROM_EXPIRY', transferStrategy: 'KEEP_EXPIRY',
    authenticationStrategy: 'TOKEN', machineLeasingStrategy: 'PER_LICENSE', processLeasingStrategy: 'PER_MACHINE', scheme: null, encrypted: false,
    protected: false, requireProductScope: false, requirePolicyScope: false, requireMachineScope: false, requireFingerprintScope: false,
    requireComponentsScope: false, requireUserScope: false, requireChecksumScope: false, requireVersionScope: false,
    heartbeatCullStrategy: 'DEACTIVATE_DEAD', heartbeatResurrectionStrategy: 'NO_REVIVE', heartbeatBasis: 'FROM_FIRST_PING',
  },
  licenses: { maxProcesses: null, maxUsers: null, maxCores: null, maxMemory: null, maxDisk: null, maxUses: null, uses: 0, scheme: null, encrypted: false, protected: false },
  machines: { cores: null, memory: null, disk: null, maxProcesses: null },
};

/** Attributes each mapping reads, or that only describe Keygen's own bookkeeping (dates, counters, derived flags). */
const MAPPED: Record<KeygenType, string[]> = {
  products: ['name', 'metadata', 'created', 'updated', 'permissions'],
  policies: [
    'name', 'duration', 'strict', 'floating', 'maxMachines', 'overageStrategy', 'expirationStrategy', 'requireHeartbeat', 'heartbeatDuration',
    'requireCheckIn', 'checkInInterval', 'checkInIntervalCount', 'metadata', 'created', 'updated',
  ],
  entitlements: ['name', 'code', 'metadata', 'created', 'updated'],
  users: ['email', 'fullName', 'firstName', 'lastName', 'status', 'role', 'permissions', 'metadata', 'created', 'updated'],
  licenses: [
    'name', 'key', 'expiry', 'status', 'suspended', 'maxMachines', 'metadata', 'strict', 'floating', 'requireHeartbeat', 'requireCheckIn', 'version',
    'lastValidated', 'lastCheckIn', 'nextCheckIn', 'lastCheckOut', 'permissions', 'created', 'updated',
  ],
  machines: ['fingerprint', 'name', 'hostname', 'platform', 'ip', 'lastHeartbeat', 'nextHeartbeat', 'heartbeatStatus', 'heartbeatDuration', 'requireHeartbeat', 'lastCheckOut', 'metadata', 'created', 'updated'],
};

const shown = (value: unknown) => {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}…` : json;
};

/** Reports the attributes of a resource that are neither mapped nor at their meaningless default, and those unknown to Keygen's serializers. */
export function reportUnmapped(resource: KeygenResource, notes: Notes) {
  const known = KNOWN_ATTRIBUTES[resource.type];
  const defaults = DEFAULTS[resource.type] ?? {};
  for (const [name, value] of Object.entries(resource.attributes)) {
    if (!known.includes(name)) {
      notes.add(resource.type, name, 'an attribute the importer does not know: not imported', resource.id);
      continue;
    }
    if (MAPPED[resource.type].includes(name) || value === null || value === undefined) continue;
    if (name in defaults && JSON.stringify(defaults[name]) === JSON.stringify(value)) continue;
    if (!(name in defaults) && (value === false || (Array.isArray(value) && !value.length))) continue;
    notes.add(resource.type, name, `Keyforge has no equivalent: not imported (e.g. ${shown(value)})`, resource.id);
  }
}

/** Metadata as custom fields: flat string values (numbers and booleans as text, objects as JSON); what does not fit is reported. */
export function customFields(resource: KeygenResource, where: string, notes: Notes, extra: Record<string, string> = {}): Record<string, string> | null {
  const fields: Record<string, string> = { ...extra };
  for (const [name, value] of Object.entries(metadata(resource, where))) {
    if (value === null || value === undefined) continue;
    const textValue = typeof value === 'string' ? value : JSON.stringify(value);
    if (name.length < 1 || name.length > 100 || textValue.length > 2000) {
      notes.add(resource.type, `metadata.${name.slice(0, 100)}`, 'a custom field holds a name of 1–100 characters and a value of at most 2,000: not imported', resource.id);
      continue;
    }
    fields[name] = textValue;
  }
  return Object.keys(fields).length ? fields : null;
}

/** Seconds as an ISO 8601 period of days (Keyforge plans count whole days): rounded up, reported when not whole. */
function durationPeriod(policy: KeygenResource, seconds: number | null, notes: Notes): string | null {
  if (seconds === null || seconds === 0) return null;
  const days = Math.ceil(seconds / 86_400);
  if (days > 36_500) {
    notes.add('policies', 'duration', 'longer than 100 years: the plan is perpetual', policy.id);
    return null;
  }
  if (seconds % 86_400 !== 0) notes.add('policies', 'duration', 'not whole days: rounded up to days', policy.id);
  return `P${days}D`;
}

const CHECK_IN_DAYS: Record<string, number> = { day: 1, week: 7, month: 31, year: 366 };
const OVERAGE: Record<string, number> = { ALLOW_1_25X_OVERAGE: 1.25, ALLOW_1_5X_OVERAGE: 1.5, ALLOW_2X_OVERAGE: 2 };

/** The seats of a policy's (or a license's overriding) maxMachines under the policy's node-locking and overage. */
function seats(policy: KeygenResource, maxMachines: number | null, where: string, notes: Notes, id: string, type: KeygenType): number {
  const floating = flag(policy, 'floating', where) ?? false;
  if (!floating) return 1;
  if (maxMachines === null || maxMachines === 0) {
    notes.add(type, 'maxMachines', `no machine limit: ${MAX_SEATS.toLocaleString('en')} seats (the most a license holds)`, id);
    return MAX_SEATS;
  }
  const overage = text(policy, 'overageStrategy', where, { max: 40 });
  if (overage && OVERAGE[overage]) return Math.min(MAX_SEATS, Math.floor(maxMachines * OVERAGE[overage]));
  if (overage === 'ALWAYS_ALLOW_OVERAGE') notes.add('policies', 'overageStrategy', 'overage always allowed: Keyforge refuses an activation past the seats', policy.id);
  return Math.min(MAX_SEATS, maxMachines);
}

export interface PlannedPlan {
  name: string;
  productKeygenId: string;
  expirationStrategy: string;
  input: {
    name: string;
    duration: string | null;
    maxActivations: number;
    nodeLocked: boolean;
    offlineGraceDays: number | null;
    features: string[];
    customFields: Record<string, string> | null;
  };
}

/** The features (entitlement codes, or names when a code is missing) of a set of entitlement ids. */
export function featureNames(account: KeygenAccount, ids: Iterable<string>, owner: { type: KeygenType; id: string }, notes: Notes): string[] {
  const names = new Set<string>();
  for (const id of ids) {
    const entitlement = account.resources.entitlements.get(id);
    if (!entitlement) {
      notes.add(owner.type, 'entitlements', 'names an entitlement the documents do not hold: not imported', owner.id);
      continue;
    }
    const name = (text(entitlement, 'code', 'entitlements') ?? text(entitlement, 'name', 'entitlements') ?? '').trim();
    if (!name || name.length > 100) {
      notes.add('entitlements', 'code', 'a feature name has 1–100 characters: not imported', entitlement.id);
      continue;
    }
    names.add(name);
  }
  return [...names].sort().slice(0, 100);
}

/** A policy as a plan of its product. */
export function planOf(account: KeygenAccount, policy: KeygenResource, notes: Notes): PlannedPlan | { error: string } {
  const where = 'policies';
  const productKeygenId = policy.related.product;
  if (!productKeygenId || !account.resources.products.has(productKeygenId)) return { error: `its product ${productKeygenId ?? '(none)'} is not in the documents` };
  reportUnmapped(policy, notes);
  const name = (text(policy, 'name', where, { max: 1000 }) ?? '').trim() || `Keygen policy ${policy.id}`;
  const strict = flag(policy, 'strict', where);
  if (strict === false && flag(policy, 'floating', where)) notes.add('policies', 'strict', 'not strict: Keyforge refuses an activation past the seats', policy.id);
  const requireCheckIn = flag(policy, 'requireCheckIn', where);
  const requireHeartbeat = flag(policy, 'requireHeartbeat', where);
  let offlineGraceDays: number | null = null;
  if (requireCheckIn) {
    const interval = text(policy, 'checkInInterval', where, { max: 20 }) ?? 'day';
    offlineGraceDays = Math.min(3650, (CHECK_IN_DAYS[interval] ?? 1) * Math.max(1, integer(policy, 'checkInIntervalCount', where) ?? 1));
  } else if (requireHeartbeat) {
    const seconds = integer(policy, 'heartbeatDuration', where) ?? 600;
    offlineGraceDays = Math.min(3650, Math.ceil(seconds / 86_400));
    notes.add('policies', 'requireHeartbeat', 'heartbeats: a client must contact Keyforge within the offline grace (whole days); devices are not deactivated when they stop', policy.id);
  }
  const expirationStrategy = text(policy, 'expirationStrategy', where, { max: 40 }) ?? 'RESTRICT_ACCESS';
  if (expirationStrategy === 'ALLOW_ACCESS') notes.add('policies', 'expirationStrategy', 'ALLOW_ACCESS: its licenses do not expire; the expiry becomes the end of maintenance', policy.id);
  const entitlements = account.policyEntitlements.get(policy.id) ?? [];
  return {
    name: name.slice(0, 200),
    productKeygenId,
    expirationStrategy,
    input: {
      name: name.slice(0, 200),
      duration: durationPeriod(policy, integer(policy, 'duration', where), notes),
      maxActivations: seats(policy, integer(policy, 'maxMachines', where), where, notes, policy.id, 'policies'),
      nodeLocked: !(flag(policy, 'floating', where) ?? false),
      offlineGraceDays,
      features: featureNames(account, entitlements, { type: 'policies', id: policy.id }, notes),
      customFields: customFields(policy, where, notes),
    },
  };
}


export interface PlannedActivation {
  keygenId: string;
  deviceId: string;
  deviceName: string | null;
  platform: string | null;
  ip: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}

export interface PlannedLicense {
  keygenId: string;
  key: string;
  policyKeygenId: string;
  status: 'active' | 'suspended' | 'revoked';
  input: {
    maxActivations: number;
    expiresAt: Date | null;
    maintenanceExpiresAt: Date | null;
    nodeLocked: boolean;
    offlineGraceDays: number | null;
    features: string[];
    customFields: Record<string, string> | null;
    customerEmail: string | null;
  };
  activations: PlannedActivation[];
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A license with its machines; an error (reported, the license skipped) when it cannot be imported at all. */
export function licenseOf(account: KeygenAccount, license: KeygenResource, machines: KeygenResource[], plans: Map<string, PlannedPlan>, notes: Notes): PlannedLicense | { error: string } {
  const where = 'licenses';
  const policyKeygenId = license.related.policy;
  const policy = policyKeygenId ? account.resources.policies.get(policyKeygenId) : undefined;
  const plan = policyKeygenId ? plans.get(policyKeygenId) : undefined;
  if (!policy || !plan) return { error: `its policy ${policyKeygenId ?? '(none)'} is not in the documents (or could not be imported)` };
  const rawKey = text(license, 'key', where, { max: 10_000 });
  if (rawKey === null) return { error: 'it has no key (a legacy encrypted key Keygen no longer shows): issue it a new key in Keyforge' };
  const key = canonicalLicenseKey(rawKey);
  if (!key) return { error: 'its key is not 8–256 printable characters without spaces: Keyforge cannot keep it' };
  reportUnmapped(license, notes);

  const status = (text(license, 'status', where, { max: 20 }) ?? 'ACTIVE').toUpperCase();
  const suspended = flag(license, 'suspended', where) ?? false;
  const keyforgeStatus = status === 'BANNED' || status === 'REVOKED' ? 'revoked' : status === 'SUSPENDED' || suspended ? 'suspended' : 'active';
  if (!['ACTIVE', 'INACTIVE', 'EXPIRING', 'EXPIRED', 'SUSPENDED', 'BANNED', 'REVOKED'].includes(status)) notes.add('licenses', 'status', `unknown status ${shown(status)}: imported as active`, license.id);

  const expiry = date(license, 'expiry', where);
  const keepsAccess = plan.expirationStrategy === 'ALLOW_ACCESS' || plan.expirationStrategy === 'MAINTAIN_ACCESS';
  const ownerId = license.related.owner ?? license.related.user ?? null;
  let customerEmail: string | null = null;
  if (ownerId) {
    const user = account.resources.users.get(ownerId);
    const email = user ? text(user, 'email', 'users', { max: 320 }) : null;
    if (!user) notes.add('licenses', 'owner', 'its owner is not in the users documents: no customer email', license.id);
    else if (email && EMAIL.test(email)) customerEmail = email.trim();
    else notes.add('users', 'email', 'not an email address: no customer email', ownerId);
  }
  const name = text(license, 'name', where, { max: 2000 });
  const fields = customFields(license, where, notes, name ? { name } : {});

  const ids = account.licenseEntitlementsRead ? (account.licenseEntitlements.get(license.id) ?? []) : (account.policyEntitlements.get(policy.id) ?? []);
  const activations: PlannedActivation[] = [];
  const seen = new Set<string>();
  for (const machine of machines) {
    reportUnmapped(machine, notes);
    const fingerprint = text(machine, 'fingerprint', 'machines', { max: 10_000 })?.trim();
    if (!fingerprint || fingerprint.length > 500) {
      notes.add('machines', 'fingerprint', 'a device id has 1–500 characters: the machine is not imported', machine.id);
      continue;
    }
    if (seen.has(fingerprint)) {
      notes.add('machines', 'fingerprint', 'a second machine of the license with the same fingerprint: not imported', machine.id);
      continue;
    }
    seen.add(fingerprint);
    const created = date(machine, 'created', 'machines') ?? new Date(0);
    activations.push({
      keygenId: machine.id,
      deviceId: fingerprint,
      deviceName: (text(machine, 'name', 'machines', { max: 10_000 }) ?? text(machine, 'hostname', 'machines', { max: 10_000 }))?.slice(0, 500) ?? null,
      platform: text(machine, 'platform', 'machines', { max: 10_000 })?.slice(0, 200) ?? null,
      ip: text(machine, 'ip', 'machines', { max: 100 }),
      createdAt: created,
      lastSeenAt: date(machine, 'lastHeartbeat', 'machines') ?? date(machine, 'updated', 'machines') ?? created,
    });
  }
  activations.sort((a, b) => (a.keygenId < b.keygenId ? -1 : 1));

  const override = integer(license, 'maxMachines', where);
  let maxActivations = override === null ? plan.input.maxActivations : seats(policy, override, where, notes, license.id, 'licenses');
  if (activations.length > maxActivations) {
    notes.add('licenses', 'maxMachines', 'more machines than seats: the seats are raised to the machines it has', license.id);
    maxActivations = Math.min(MAX_SEATS, activations.length);
  }
  return {
    keygenId: license.id,
    key,
    policyKeygenId: policy.id,
    status: keyforgeStatus,
    input: {
      maxActivations,
      expiresAt: keepsAccess ? null : expiry,
      maintenanceExpiresAt: keepsAccess ? expiry : null,
      nodeLocked: plan.input.nodeLocked,
      offlineGraceDays: plan.input.offlineGraceDays,
      features: featureNames(account, ids, { type: 'licenses', id: license.id }, notes),
      customFields: fields,
      customerEmail,
    },
    activations,
  };
}
