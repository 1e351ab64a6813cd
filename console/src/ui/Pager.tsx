import { Button, Group, Text } from '@mantine/core';
import { IconChevronLeft, IconChevronRight } from '@tabler/icons-react';

/** "Showing 21–40 of 57" with Previous/Next, for cursor-paginated lists. */
export function Pager({ page, pageSize, shown, total, hasPrevious, hasNext, onPrevious, onNext, busy }: {
  page: number;
  pageSize: number;
  shown: number;
  total: number;
  hasPrevious: boolean;
  hasNext: boolean;
  onPrevious: () => void;
  onNext: () => void;
  busy?: boolean;
}) {
  const from = shown === 0 ? 0 : (page - 1) * pageSize + 1;
  return (
    <Group justify="space-between" p="sm">
      <Text size="sm" c="dimmed" aria-live="polite">
        {shown === 0 ? 'No results' : `Showing ${from}–${from + shown - 1} of ${total}`}
      </Text>
      <Group gap="xs">
        <Button variant="default" size="xs" leftSection={<IconChevronLeft size={14} />} disabled={!hasPrevious || busy} onClick={onPrevious}>
          Previous
        </Button>
        <Button variant="default" size="xs" rightSection={<IconChevronRight size={14} />} disabled={!hasNext || busy} onClick={onNext}>
          Next
        </Button>
      </Group>
    </Group>
  );
}
