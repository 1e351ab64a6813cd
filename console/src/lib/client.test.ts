import { buildSchema, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import schemaText from '../../../server/schema.graphql?raw';
import { EMBEDDED_TYPES, MUTATIONS, payloadType } from './client';

const schema = buildSchema(schemaText);

describe('graphcache config', () => {
  it('names every object type of the schema that has no id (connections, edges, PageInfo and payloads aside)', () => {
    const withoutId = Object.values(schema.getTypeMap())
      .filter(isObjectType)
      .filter((type) => !/^__|^(Query|Mutation|Subscription)$|PageInfo|(Connection|Edge)$/.test(type.name) && !type.getFields().id)
      .map((type) => type.name)
      .filter((name) => name !== 'JobSchedule' && !/Payload$/.test(name))
      .sort();
    expect([...EMBEDDED_TYPES].sort()).toEqual(withoutId);
  });

  it('knows every mutation (its updates make lists stale) and its payload type', () => {
    const mutations = Object.keys(schema.getMutationType()!.getFields()).sort();
    expect(Object.keys(MUTATIONS).sort()).toEqual(mutations);
    for (const name of mutations) expect(String(schema.getMutationType()!.getFields()[name].type).replace(/!$/, '')).toBe(payloadType(name));
  });
});
