import { Code, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { graphql, readFragment, type FragmentOf, type ResultOf } from '../../../graphql';
import { formatDate, relativeTime } from '../../../lib/format';
import { DataTable } from '../../../ui/DataTable';
import { roleLabel } from './RoleSelect';

/** What the API keys list shows of a key (never the key itself: only its hint). */
export const ApiKeyFields = graphql(`
  fragment ApiKeyFields on ApiKey {
    id
    name
    role
    hint
    createdAt
    lastUsedAt
    revokedAt
  }
`);

export type ApiKey = ResultOf<typeof ApiKeyFields>;

/** The API keys list; the page supplies each row's actions. */
export function ApiKeysTable({ apiKeys, renderActions }: { apiKeys: readonly FragmentOf<typeof ApiKeyFields>[]; renderActions: (key: ApiKey) => ReactNode }) {
  const records = readFragment(ApiKeyFields, apiKeys);
  return (
    <DataTable
      records={records}
      minWidth={720}
      rowOpacity={(key) => (key.revokedAt ? 0.6 : 1)}
      columns={[
        {
          accessor: 'name',
          title: 'Name',
          render: (key) => (
            <Text size="sm" fw={500}>
              {key.name}
            </Text>
          ),
        },
        { accessor: 'hint', title: 'Key', render: (key) => <Code>{key.hint}</Code> },
        { accessor: 'role', title: 'Role', render: (key) => roleLabel(key.role) },
        { accessor: 'createdAt', title: 'Created', render: (key) => formatDate(key.createdAt) },
        { accessor: 'lastUsedAt', title: 'Last used', render: (key) => relativeTime(key.lastUsedAt) },
        { accessor: 'actions', title: '', render: (key) => renderActions(key) },
      ]}
    />
  );
}
