import { Alert, Button, Center, Group, Loader, Stack, Text } from '@mantine/core';
import { IconAlertTriangle, IconInbox, IconLock } from '@tabler/icons-react';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import type { CombinedError } from 'urql';
import { errorCode, errorMessage } from '../lib/errors';

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

export function EmptyState({ title, children, action, icon = IconInbox }: { title: string; children?: ReactNode; action?: ReactNode; icon?: typeof IconInbox }) {
  const Icon = icon;
  return (
    <Center py="xl">
      <Stack align="center" gap="xs" maw={420}>
        <Icon size={36} stroke={1.3} color="var(--mantine-color-gray-5)" aria-hidden />
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

/** A page or panel the caller's role may not see (read-only members on admin pages). */
export function NoAccess() {
  return (
    <EmptyState
      title="This needs the CompanyAdmin role"
      icon={IconLock}
      action={
        <Button component={Link} to="/" variant="light">
          Go to the dashboard
        </Button>
      }
    >
      Your role is read-only, so this is not shown to you. Ask a company admin if you need it.
    </EmptyState>
  );
}

interface QueryStateProps<T> {
  result: { data?: T | null; fetching: boolean; error?: CombinedError };
  onRetry?: () => void;
  /** True when the loaded data has nothing to show. */
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}

/**
 * Loading, error and empty states of one query, then the content. Stale data stays visible when a refetch fails
 * to reach the server; data that came with GraphQL errors is partial (the refused fields are null) and is not shown.
 */
export function QueryState<T>({ result, onRetry, isEmpty, empty, children }: QueryStateProps<T>) {
  if (errorCode(result.error) === 'Forbidden') return <NoAccess />;
  // graphcache answers a cache miss with data null while the network request runs.
  if (result.data === undefined || result.data === null || (result.error?.graphQLErrors.length ?? 0) > 0) {
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
