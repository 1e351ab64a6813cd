import { buildSchema, getNamedType, isObjectType, TypeInfo, visit, visitWithTypeInfo, type DocumentNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import schemaText from '../../../server/schema.graphql?raw';
import { EMBEDDED_TYPES, MUTATIONS, PAGINATED, payloadType } from './client';

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

  it('every selection of an object with an id selects it (else graphcache cannot normalize it, and updates miss it)', () => {
    const modules = import.meta.glob<Record<string, unknown>>('../modules/*/graphql/documents.ts', { eager: true });
    const missing: string[] = [];
    let checked = 0;
    for (const [file, exports] of Object.entries(modules)) {
      for (const [name, value] of Object.entries(exports)) {
        if (!value || typeof value !== 'object' || !('definitions' in value)) continue;
        const typeInfo = new TypeInfo(schema);
        visit(
          value as DocumentNode,
          visitWithTypeInfo(typeInfo, {
            SelectionSet(node, _key, parent) {
              const type = getNamedType(typeInfo.getType() ?? undefined) ?? typeInfo.getParentType();
              if (!type || !isObjectType(type) || !type.getFields().id) return;
              // A fragment's own selection is checked where the fragment is spread: its type has to select id there.
              if (parent && !Array.isArray(parent) && (parent as { kind?: string }).kind === 'FragmentDefinition') return;
              checked++;
              const selectsId = node.selections.some((selection) => selection.kind === 'Field' && selection.name.value === 'id');
              const spreadsFragment = node.selections.some((selection) => selection.kind === 'FragmentSpread');
              if (!selectsId && !spreadsFragment) missing.push(`${file} ${name} ${type.name}`);
            },
          }),
        );
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });

  it('every query of a merged (relayPagination) connection selects its pageInfo, without which the merge yields null', () => {
    const modules = import.meta.glob<Record<string, unknown>>('../modules/*/graphql/documents.ts', { eager: true });
    const fields = new Set(PAGINATED.map((field) => field.split('.')[1]));
    const missing: string[] = [];
    let checked = 0;
    for (const [file, exports] of Object.entries(modules)) {
      for (const [name, value] of Object.entries(exports)) {
        if (!value || typeof value !== 'object' || !('definitions' in value)) continue;
        visit(value as DocumentNode, {
          Field(node) {
            if (!fields.has(node.name.value) || !node.selectionSet) return;
            checked++;
            if (!node.selectionSet.selections.some((selection) => selection.kind === 'Field' && selection.name.value === 'pageInfo')) missing.push(`${file} ${name} ${node.name.value}`);
          },
        });
      }
    }
    expect(checked).toBeGreaterThan(4);
    expect(missing).toEqual([]);
  });
});
