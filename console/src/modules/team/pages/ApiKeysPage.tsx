import { Badge, Button, Code, Paper, Text } from '@mantine/core';
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
import { DataTable } from '../../../ui/DataTable';

export function ApiKeysPage() {
  const [result, reload] = useQuery({ query: ApiKeysQuery });
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
            <DataTable
              records={data.apiKeys.nodes}
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
                { accessor: 'actions', title: '', render: (key) => <ApiKeyActions apiKey={key} canManage={canManage} /> },
              ]}
            />
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function ApiKeyActions({ apiKey: key, canManage }: { apiKey: FragmentOf<typeof ApiKeyFields>; canManage: boolean }) {
  const revoke = useApiMutation(RevokeApiKeyMutation, { success: (d) => `The key “${d.revokeApiKey.apiKey.name}” was revoked.` });
  if (key.revokedAt) {
    return (
      <Badge color="gray" variant="light">
        revoked {formatDate(key.revokedAt)}
      </Badge>
    );
  }
  return (
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
  );
}
