import { readFileSync } from 'node:fs';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isUnionType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE } from '../server/src/graphql/print-schema.js';

// The conventions an integrator can rely on, checked on the committed SDL (graphql-schema.test.ts keeps it
// equal to what the code builds). See the comment in server/src/graphql/builder.ts.

const schema = buildSchema(readFileSync(SCHEMA_FILE, 'utf8'));
const capitalize = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** Mutations with nothing to send take no argument (an input object cannot be empty in GraphQL). */
const NO_INPUT = ['logout', 'refreshSession', 'sendTestEmail', 'startMfaEnrollment'];

/** Lists of records that are bounded by design and stay plain lists. */
const BOUNDED_LISTS = [
  'DashboardStats.expiringLicenses', // the 8 soonest, by definition
  'Product.bundleMembers', // the members of one bundle
  'Release.artifacts', // the files of one release (at most MAX_ARTIFACTS_PER_RELEASE)
];

const userTypes = () => Object.values(schema.getTypeMap()).filter((type) => !type.name.startsWith('__'));
const objectTypes = () => userTypes().filter(isObjectType);

describe('GraphQL conventions (server/schema.graphql)', () => {
  it('every enum value is SCREAMING_CASE', () => {
    const offenders = userTypes()
      .filter(isEnumType)
      .flatMap((type) => type.getValues().map((value) => `${type.name}.${value.name}`))
      .filter((name) => !/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/.test(name.split('.')[1]));
    expect(offenders).toEqual([]);
  });

  it('every mutation takes exactly one non-null `input` argument of its own <Name>Input type (or none when it has nothing to send)', () => {
    const mutations = Object.values(schema.getMutationType()!.getFields());
    expect(mutations.length).toBeGreaterThan(20);
    for (const mutation of mutations) {
      if (NO_INPUT.includes(mutation.name)) {
        expect(mutation.args, mutation.name).toEqual([]);
        continue;
      }
      expect(mutation.args.map((arg) => arg.name), mutation.name).toEqual(['input']);
      const [input] = mutation.args;
      expect(isNonNullType(input.type), `${mutation.name}(input:) is required`).toBe(true);
      expect(getNamedType(input.type).name, mutation.name).toBe(`${capitalize(mutation.name)}Input`);
    }
  });

  it('every mutation returns a non-null <Name>Payload object (login: a union of objects)', () => {
    for (const mutation of Object.values(schema.getMutationType()!.getFields())) {
      expect(isNonNullType(mutation.type), `${mutation.name} payload is non-null`).toBe(true);
      const payload = getNullableType(mutation.type) as GraphQLNamedType;
      expect(payload.name, mutation.name).toBe(`${capitalize(mutation.name)}Payload`);
      if (isUnionType(payload)) {
        expect(payload.getTypes().length).toBeGreaterThan(1);
        continue;
      }
      expect(isObjectType(payload), `${mutation.name} returns an object`).toBe(true);
    }
    const login = getNullableType(schema.getMutationType()!.getFields().login.type);
    expect(isUnionType(login) && login.getTypes().map((type) => type.name).sort()).toEqual(['LoginSuccess', 'MfaRequired', 'PasswordChangeRequired']);
    const reset = getNullableType(schema.getMutationType()!.getFields().resetPassword.type);
    expect(isUnionType(reset) && reset.getTypes().map((type) => type.name).sort()).toEqual(['LoginSuccess', 'MfaRequired']);
  });

  it('every list of records is a Relay connection with edges, nodes, pageInfo and totalCount, paged by first/after/last/before', () => {
    const isRecord = (type: GraphQLNamedType) => isObjectType(type) && 'id' in type.getFields();
    const lists: string[] = [];
    const connections: GraphQLField<unknown, unknown>[] = [];
    for (const type of objectTypes()) {
      for (const field of Object.values(type.getFields())) {
        const named = getNamedType(field.type);
        if (isListType(getNullableType(field.type)) && isRecord(named) && !type.name.endsWith('Connection')) lists.push(`${type.name}.${field.name}`);
        if (named.name.endsWith('Connection')) connections.push(field);
      }
    }
    expect(lists.filter((name) => !BOUNDED_LISTS.includes(name))).toEqual([]);

    for (const name of ['products', 'users', 'apiKeys', 'licenses', 'activityLog', 'emails', 'invitations']) {
      expect(getNamedType(schema.getQueryType()!.getFields()[name].type).name, name).toMatch(/Connection$/);
    }
    expect(connections.length).toBeGreaterThanOrEqual(9);
    for (const field of connections) {
      expect(field.args.map((arg) => arg.name).filter((arg) => ['first', 'after', 'last', 'before'].includes(arg)).sort(), field.name).toEqual(['after', 'before', 'first', 'last']);
      const connection = getNamedType(field.type) as GraphQLObjectType;
      const fields = connection.getFields();
      expect(Object.keys(fields), connection.name).toEqual(expect.arrayContaining(['edges', 'nodes', 'pageInfo', 'totalCount']));
      const edge = getNamedType(fields.edges.type) as GraphQLObjectType;
      expect(Object.keys(edge.getFields()).sort(), edge.name).toEqual(['cursor', 'node']);
    }
    const pageInfo = schema.getType('PageInfo') as GraphQLObjectType;
    expect(Object.keys(pageInfo.getFields()).sort()).toEqual(['endCursor', 'hasNextPage', 'hasPreviousPage', 'startCursor']);
  });

  it('single lookups by id answer null rather than an error', () => {
    const query = schema.getQueryType()!.getFields();
    for (const name of ['license', 'product', 'floatingSessions', 'usageTotals', 'invitation']) {
      expect(isNonNullType(query[name].type), `${name} is nullable`).toBe(false);
    }
  });

  it('one word for the vendor: company (as the role COMPANY_ADMIN), never tenant', () => {
    const sdl = readFileSync(SCHEMA_FILE, 'utf8');
    expect(sdl).not.toMatch(/tenant/i);
    expect(schema.getType('Company')).toBeDefined();
  });
});
