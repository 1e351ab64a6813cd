import { Alert, Button, Center, Group, Loader, Stack, Text } from '@mantine/core';
import { IconAlertTriangle, IconInbox } from '@tabler/icons-react';
import type { ReactNode } from 'react';
import type { CombinedError } from 'urql';
import { errorMessage } from '../lib/errors';

export function ErrorAlert({ error, onRetry, title = 'Could not load this' }: { error: CombinedError | Error; onRetry?: () => void; title?: string }) {
  return (
    <Alert color="red" variant="light" title={title} icon={<IconAlertTriangle size={18} />} role="alert">
      <Group justify="space-between" gap="sm">
        <Text size="sm">{errorMessage(error)}</Text>
        {onRetry && (
          <Button size="xs" variant="white" color="red" onClick={onRetry}>
            Try again
          </Button>
        )}
      </Group>
    </Alert>
  );
}

export function EmptyState({ title, children, action }: { title: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <Center py="xl">
      <Stack align="center" gap="xs" maw={420}>
        <IconInbox size={36} stroke={1.3} color="var(--mantine-color-gray-5)" aria-hidden />
        <Text fw={600}>{title}</Text>
        {children && (
          <Text size="sm" c="dimmed" ta="center">
            {children}
          </Text>
        )}
        {action}
      </Stack>
    </Center>
  );
}

export function LoadingState({ label = 'Loading…' }: { label?: string }) {
  return (
    <Center py="xl" role="status" aria-live="polite">
      <Group gap="xs">
        <Loader size="sm" />
        <Text size="sm" c="dimmed">
          {label}
        </Text>
      </Group>
    </Center>
  );
}

interface QueryStateProps<T> {
  result: { data?: T; fetching: boolean; error?: CombinedError };
  onRetry?: () => void;
  /** True when the loaded data has nothing to show. */
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}

/** Loading, error and empty states of one query, then the content. Stale data stays visible while refetching. */
export function QueryState<T>({ result, onRetry, isEmpty, empty, children }: QueryStateProps<T>) {
  if (result.data === undefined) {
    if (result.error) return <ErrorAlert error={result.error} onRetry={onRetry} />;
    return <LoadingState />;
  }
  return (
    <>
      {result.error && <ErrorAlert error={result.error} onRetry={onRetry} title="Could not refresh" />}
      {isEmpty?.(result.data) ? empty : children(result.data)}
    </>
  );
}
