import { buildSchema, isEnumType } from 'graphql';
import { describe, expect, it } from 'vitest';
import schemaText from '../../../../server/schema.graphql?raw';
import { SUBSCRIBABLE_EVENT_TYPES, wireName, type WebhookEventType } from './eventTypes';

const enumValues = () => {
  const type = buildSchema(schemaText).getType('WebhookEventType');
  if (!isEnumType(type)) throw new Error('WebhookEventType is not an enum of the schema');
  return type.getValues().map((value) => value.name as WebhookEventType);
};

describe('webhook event types', () => {
  it('the filter offers every event type of the schema but the test event', () => {
    expect([...SUBSCRIBABLE_EVENT_TYPES].sort()).toEqual(enumValues().filter((type) => type !== 'WEBHOOK_TEST').sort());
  });

  it('each is shown by its payload name, whose upper case with underscores is the enum value', () => {
    for (const type of enumValues()) {
      expect(wireName(type)).toMatch(/^[a-z_]+\.[a-z_]+$/);
      expect(wireName(type).toUpperCase().replace('.', '_')).toBe(type);
    }
    expect(wireName('API_KEY_CREATED')).toBe('api_key.created');
    expect(wireName('LICENSE_SEATS_EXHAUSTED')).toBe('license.seats_exhausted');
  });
});
