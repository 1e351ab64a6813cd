import { Badge, Button, Code, Paper, Table, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconPlus } from '@tabler/icons-react';
import { useQuery } from 'urql';
import type { FragmentOf } from '../../../graphql';
import { formatDate, relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { CreateApiKeyModal } from '../components/CreateApiKeyModal';
import { roleLabel } from '../components/RoleSelect';
import { ApiKeysQuery, RevokeApiKeyMutation, type ApiKeyFields } from '../graphql/documents';
import { refetchOn } from '../../../lib/client';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

export function ApiKeysPage() {
  const [result, reload] = useQuery({ query: ApiKeysQuery, context: refetchOn('ApiKey') });
  const [creating, { open, close }] = useDisclosure(false);
  const canManage = useCanManage();
  const createButton = (
    <Button leftSection={<IconPlus size={16} />} onClick={open} disabled={!canManage}>
      Create API key
    </Button>
  );

  return (
    <>
      <PageHeader title="API keys" description="Keys for your own servers to call the management API (header X-Api-Key). Never ship one inside a customer application." actions={createButton} />
      <CreateApiKeyModal opened={creating} onClose={close} />
      <Paper>
        <QueryState
          result={result}
          onRetry={() => reload({ requestPolicy: 'network-only' })}
          isEmpty={(data) => data.apiKeys.nodes.length === 0}
          empty={<EmptyState title="No API keys yet">Create one to automate license management from your backend.</EmptyState>}
        >
          {(data) => (
            <ResponsiveTable minWidth={720}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Key</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>Created</Table.Th>
                    <Table.Th>Last used</Table.Th>
                    <Table.Th aria-label="Actions" />
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {data.apiKeys.nodes.map((key) => (
                    <ApiKeyRow key={key.id} apiKey={key} canManage={canManage} />
                  ))}
                </Table.Tbody>
              </Table>
            </ResponsiveTable>
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function ApiKeyRow({ apiKey: key, canManage }: { apiKey: FragmentOf<typeof ApiKeyFields>; canManage: boolean }) {
  const revoke = useApiMutation(RevokeApiKeyMutation, { success: (d) => `The key “${d.revokeApiKey.apiKey.name}” was revoked.` });
  return (
    <Table.Tr opacity={key.revokedAt ? 0.6 : 1}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {key.name}
        </Text>
      </Table.Td>
      <Table.Td>
        <Code>{key.hint}</Code>
      </Table.Td>
      <Table.Td>{roleLabel(key.role)}</Table.Td>
      <Table.Td>{formatDate(key.createdAt)}</Table.Td>
      <Table.Td>{relativeTime(key.lastUsedAt)}</Table.Td>
      <Table.Td ta="right">
        {key.revokedAt ? (
          <Badge color="gray" variant="light">
            revoked {formatDate(key.revokedAt)}
          </Badge>
        ) : (
          canManage && (
            <ConfirmAction
              size="xs"
              label="Revoke"
              title={`Revoke “${key.name}”?`}
              message="Requests with this key fail immediately. This cannot be undone."
              confirmLabel="Revoke key"
              busy={revoke.saving}
              onConfirm={() => revoke.run({ id: key.id })}
            />
          )
        )}
      </Table.Td>
    </Table.Tr>
  );
}
