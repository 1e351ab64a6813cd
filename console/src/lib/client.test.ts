import { buildSchema, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import schemaText from '../../../server/schema.graphql?raw';
import { EMBEDDED_TYPES } from './client';

describe('graphcache keys', () => {
  it('names every object type of the schema that has no id (connections, edges and PageInfo aside)', () => {
    const schema = buildSchema(schemaText);
    const withoutId = Object.values(schema.getTypeMap())
      .filter(isObjectType)
      .filter((type) => !/^__|^(Query|Mutation|Subscription)$|PageInfo|(Connection|Edge)$/.test(type.name) && !type.getFields().id)
      .map((type) => type.name)
      .filter((name) => name !== 'JobSchedule')
      .sort();
    expect([...EMBEDDED_TYPES].sort()).toEqual(withoutId);
  });
});
