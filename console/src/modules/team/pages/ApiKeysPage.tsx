import { Badge, Button, Paper } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconPlus } from '@tabler/icons-react';
import { useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { formatDate } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { CreateApiKeyModal } from '../components/CreateApiKeyModal';
import { ApiKeyFields, ApiKeysTable, type ApiKey } from '../components/ApiKeysTable';
import { ApiKeysQuery, RevokeApiKeyMutation } from '../graphql/documents';

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
            <ApiKeysTable apiKeys={data.apiKeys.nodes} renderActions={(key) => <ApiKeyActions apiKey={key} canManage={canManage} />} />
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function ApiKeyActions({ apiKey: key, canManage }: { apiKey: ApiKey; canManage: boolean }) {
  const revoke = useApiMutation(RevokeApiKeyMutation, { success: (d) => `The key “${readFragment(ApiKeyFields, d.revokeApiKey.apiKey).name}” was revoked.` });
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
