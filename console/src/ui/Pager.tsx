import { Button, Group, Text } from '@mantine/core';
import { IconChevronLeft, IconChevronRight } from '@tabler/icons-react';
import type { useCursorPages } from './useCursorPages';

/** The part of a GraphQL connection the pager needs. */
export interface PagedConnection {
  nodes: readonly unknown[];
  totalCount: number;
  /** The server stopped counting at totalCount: more rows match. */
  totalCountCapped?: boolean;
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
}

/** "Showing 21–40 of 57" with Previous/Next, for a cursor-paginated connection and its useCursorPages state. */
export function Pager({ pages, connection, pageSize, busy }: {
  pages: ReturnType<typeof useCursorPages>;
  connection: PagedConnection;
  pageSize: number;
  busy?: boolean;
}) {
  const shown = connection.nodes.length;
  const from = shown === 0 ? 0 : (pages.page - 1) * pageSize + 1;
  const total = `${connection.totalCount.toLocaleString('en-US')}${connection.totalCountCapped ? '+' : ''}`;
  return (
    <Group justify="space-between" p="sm">
      <Text size="sm" c="dimmed" aria-live="polite">
        {shown === 0 ? 'No results' : `Showing ${from}–${from + shown - 1} of ${total}`}
      </Text>
      <Group gap="xs">
        <Button variant="default" size="xs" leftSection={<IconChevronLeft size={14} />} disabled={!pages.hasPrevious || busy} onClick={pages.previous}>
          Previous
        </Button>
        <Button
          variant="default"
          size="xs"
          rightSection={<IconChevronRight size={14} />}
          disabled={!connection.pageInfo.hasNextPage || busy}
          onClick={() => pages.next(connection.pageInfo.endCursor)}
        >
          Next
        </Button>
      </Group>
    </Group>
  );
}
