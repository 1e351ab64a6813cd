import { Paper, Stack, Switch, Text, Title } from '@mantine/core';
import { useQuery } from 'urql';
import { QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { NotificationPreferencesQuery, UpdateNotificationPreferencesMutation } from '../graphql/documents';

const PREFERENCES = [
  { field: 'digestEmailEnabled', label: 'Weekly digest', description: 'Every Monday: active licenses, activations of the week and upcoming expiries.' },
  { field: 'expiryEmailEnabled', label: 'License expiry alerts', description: 'When licenses are 30, 7 and 1 day from expiring.' },
] as const;

/** Per-user email preferences; each switch saves at once. Other admins keep their own settings. */
export function NotificationPreferencesCard() {
  const [result, reload] = useQuery({ query: NotificationPreferencesQuery });
  const update = useApiMutation(UpdateNotificationPreferencesMutation, { success: 'Notification preferences saved.' });

  return (
    <Paper p="lg">
      <Stack>
        <div>
          <Title order={3} size="h4">
            Email notifications
          </Title>
          <Text size="sm" c="dimmed">
            Only your own emails change; other admins keep theirs.
          </Text>
        </div>
        <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
          {(data) => (
            <Stack gap="md">
              {PREFERENCES.map(({ field, label, description }) => (
                <Switch
                  key={field}
                  label={label}
                  description={description}
                  checked={data.notificationPreferences[field]}
                  disabled={update.saving}
                  onChange={(event) => void update.run({ [field]: event.currentTarget.checked })}
                />
              ))}
            </Stack>
          )}
        </QueryState>
      </Stack>
    </Paper>
  );
}
