import { AppError } from '../../domain/errors.js';
import { findUnstorableString } from '../validation.js';

// Keygen's API answers JSON:API documents: a list endpoint answers one page `{ data: [resource…], links: { self,
// next, … } }`, each resource `{ id, type, attributes: { camelCase… }, relationships: { name: { data: { type, id } |
// null, links } } }`. This module checks the shape of such a page and of the attributes the importer reads, and
// says which attributes it knows: an attribute it does not know is listed in the import's report, never dropped
// in silence. A document that is not of this shape stops the import before anything is written.

/** The Keygen resource types the importer reads (the list endpoints of the same names). */
export const KEYGEN_TYPES = ['products', 'policies', 'entitlements', 'users', 'licenses', 'machines'] as const;
export type KeygenType = (typeof KEYGEN_TYPES)[number];

export interface KeygenResource {
  id: string;
  type: KeygenType;
  attributes: Record<string, unknown>;
  /** Each relationship's linkage: the related id, or null when the linkage is null or absent. */
  related: Record<string, string | null>;
}

export interface KeygenPage {
  /** The resources of the page, in order; resources of other types (a compound document's `included`) are ignored. */
  data: KeygenResource[];
  /** `links.self` and `links.next` as given (a path such as `/v1/accounts/…/licenses?page[number]=2`), or null. */
  self: string | null;
  next: string | null;
}

/** The attributes of each type Keygen's serializers write (camelCase). Any other is listed in the report. */
export const KNOWN_ATTRIBUTES: Record<KeygenType, readonly string[]> = {
  products: ['name', 'code', 'distributionStrategy', 'url', 'platforms', 'permissions', 'metadata', 'created', 'updated'],
  policies: [
    'name', 'duration', 'strict', 'floating', 'usePool', 'maxMachines', 'maxProcesses', 'maxUsers', 'maxCores', 'maxMemory', 'maxDisk', 'maxUses',
    'machineUniquenessStrategy', 'machineMatchingStrategy', 'componentUniquenessStrategy', 'componentMatchingStrategy', 'expirationStrategy',
    'expirationBasis', 'renewalBasis', 'transferStrategy', 'authenticationStrategy', 'machineLeasingStrategy', 'processLeasingStrategy',
    'overageStrategy', 'scheme', 'encrypted', 'protected', 'requireProductScope', 'requirePolicyScope', 'requireMachineScope',
    'requireFingerprintScope', 'requireComponentsScope', 'requireUserScope', 'requireChecksumScope', 'requireVersionScope', 'requireCheckIn',
    'checkInInterval', 'checkInIntervalCount', 'heartbeatDuration', 'heartbeatCullStrategy', 'heartbeatResurrectionStrategy', 'heartbeatBasis',
    'requireHeartbeat', 'metadata', 'created', 'updated',
  ],
  entitlements: ['name', 'code', 'metadata', 'created', 'updated'],
  users: ['fullName', 'firstName', 'lastName', 'email', 'status', 'role', 'permissions', 'metadata', 'created', 'updated'],
  licenses: [
    'name', 'key', 'expiry', 'status', 'uses', 'suspended', 'scheme', 'encrypted', 'strict', 'floating', 'protected', 'version', 'maxMachines',
    'maxProcesses', 'maxUsers', 'maxCores', 'maxMemory', 'maxDisk', 'maxUses', 'requireHeartbeat', 'requireCheckIn', 'lastValidated', 'lastCheckIn',
    'nextCheckIn', 'lastCheckOut', 'permissions', 'metadata', 'created', 'updated',
  ],
  machines: [
    'fingerprint', 'cores', 'memory', 'disk', 'ip', 'hostname', 'platform', 'name', 'requireHeartbeat', 'heartbeatStatus', 'heartbeatDuration',
    'maxProcesses', 'lastCheckOut', 'lastHeartbeat', 'nextHeartbeat', 'metadata', 'created', 'updated',
  ],
};

/** The most resources one page may hold (Keygen's pages hold at most 100). */
export const MAX_PAGE_RESOURCES = 10_000;
const MAX_ID = 200;

/** A document the importer cannot read: where it is and what is wrong, never its content. */
export const malformed = (where: string, message: string) => new AppError('InvalidRequest', `${where}: ${message}`);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const describe = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value);

function linkText(links: unknown, name: string, where: string): string | null {
  if (!isObject(links)) return null;
  const value = links[name];
  if (value === undefined || value === null) return null;
  // JSON:API allows a link object { href, meta }.
  const href = isObject(value) ? value.href : value;
  if (typeof href !== 'string' || href.length > 4096) throw malformed(where, `links.${name} must be a URL or null, got ${describe(href)}`);
  return href;
}

/**
 * Checks one page of a list endpoint. `where` names it in errors (a file name or the URL path without its query).
 * Throws InvalidRequest for a document that is not a JSON:API list page of Keygen resources.
 */
export function parsePage(document: unknown, where: string): KeygenPage {
  if (!isObject(document)) throw malformed(where, `a JSON:API document is an object, got ${describe(document)}`);
  if (document.errors !== undefined) throw malformed(where, 'the document is an error answer (it has "errors"), not a page of resources');
  const unstorable = findUnstorableString(document.data);
  if (unstorable) throw malformed(where, `data.${unstorable} holds a NUL character or an unpaired surrogate, which cannot be stored`);
  const { data } = document;
  if (!Array.isArray(data)) throw malformed(where, `"data" must be an array of resources (a list endpoint's page), got ${describe(data)}`);
  if (data.length > MAX_PAGE_RESOURCES) throw malformed(where, `a page holds at most ${MAX_PAGE_RESOURCES} resources, this one ${data.length}`);
  const resources: KeygenResource[] = [];
  data.forEach((item, index) => {
    const at = `${where}: data[${index}]`;
    if (!isObject(item)) throw malformed(at, `a resource is an object, got ${describe(item)}`);
    const { id, type, attributes, relationships } = item;
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID) throw malformed(at, `"id" must be a string of 1 to ${MAX_ID} characters`);
    if (typeof type !== 'string') throw malformed(at, `"type" must be a string, got ${describe(type)}`);
    if (!(KEYGEN_TYPES as readonly string[]).includes(type)) throw malformed(at, `"type" ${JSON.stringify(type.slice(0, 40))} is not one of ${KEYGEN_TYPES.join(', ')}`);
    if (!isObject(attributes)) throw malformed(at, `"attributes" must be an object, got ${describe(attributes)}`);
    if (relationships !== undefined && !isObject(relationships)) throw malformed(at, `"relationships" must be an object, got ${describe(relationships)}`);
    const related: Record<string, string | null> = {};
    for (const [name, relationship] of Object.entries(relationships ?? {})) {
      if (!isObject(relationship)) throw malformed(at, `relationships.${name} must be an object`);
      const linkage = relationship.data;
      if (linkage === undefined || linkage === null || Array.isArray(linkage)) {
        related[name] = null;
        continue;
      }
      if (!isObject(linkage) || typeof linkage.id !== 'string' || linkage.id.length === 0 || linkage.id.length > MAX_ID) {
        throw malformed(at, `relationships.${name}.data must be { type, id } or null`);
      }
      related[name] = linkage.id;
    }
    resources.push({ id, type: type as KeygenType, attributes, related });
  });
  return { data: resources, self: linkText(document.links, 'self', where), next: linkText(document.links, 'next', where) };
}

// Readers of the attributes the importer maps: a value of the wrong type stops the import with its place.

export function text(resource: KeygenResource, name: string, where: string, options: { required?: boolean; max?: number } = {}): string | null {
  const value = resource.attributes[name];
  if (value === undefined || value === null) {
    if (options.required) throw malformed(where, `${resource.type} ${resource.id}: attributes.${name} is required`);
    return null;
  }
  if (typeof value !== 'string') throw malformed(where, `${resource.type} ${resource.id}: attributes.${name} must be a string, got ${describe(value)}`);
  if (value.length > (options.max ?? 10_000)) throw malformed(where, `${resource.type} ${resource.id}: attributes.${name} is longer than ${options.max ?? 10_000} characters`);
  return value;
}

export function integer(resource: KeygenResource, name: string, where: string): number | null {
  const value = resource.attributes[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw malformed(where, `${resource.type} ${resource.id}: attributes.${name} must be a whole number ≥ 0 or null, got ${typeof value === 'number' ? value : describe(value)}`);
  }
  return value;
}

export function flag(resource: KeygenResource, name: string, where: string): boolean | null {
  const value = resource.attributes[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'boolean') throw malformed(where, `${resource.type} ${resource.id}: attributes.${name} must be true or false, got ${describe(value)}`);
  return value;
}

export function date(resource: KeygenResource, name: string, where: string): Date | null {
  const value = text(resource, name, where, { max: 64 });
  if (value === null) return null;
  const parsed = new Date(value);
  if (Number.isNaN(parsed.getTime()) || parsed.getUTCFullYear() < 1 || parsed.getUTCFullYear() > 9999) {
    throw malformed(where, `${resource.type} ${resource.id}: attributes.${name} must be an ISO 8601 date-time, got ${JSON.stringify(value.slice(0, 40))}`);
  }
  return parsed;
}

export function metadata(resource: KeygenResource, where: string): Record<string, unknown> {
  const value = resource.attributes.metadata;
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw malformed(where, `${resource.type} ${resource.id}: attributes.metadata must be an object, got ${describe(value)}`);
  return value;
}
