import { Button, Group, Text } from '@mantine/core';
import { DataTable as MantineDataTable, type DataTableColumn, type DataTableRowExpansionProps } from 'mantine-datatable';
import type { CSSProperties, ReactNode } from 'react';

/** One column: its header (also the cell's label on a phone) and how a record renders in it. */
export interface Column<T> {
  /** Column key (and accessor when there is no render function). */
  accessor: string;
  /** Header text; '' for an unlabelled actions column (right-aligned, no label on a phone). */
  title: string;
  render?: (record: T, index: number) => ReactNode;
  textAlign?: 'left' | 'center' | 'right';
  width?: number | string;
}

/** The part of a GraphQL connection the paging footer needs. */
export interface PagedConnection {
  totalCount: number;
  /** The server stopped counting at totalCount: more rows match. */
  totalCountCapped?: boolean | null;
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
}

interface DataTableProps<T> {
  records: readonly T[];
  columns: Column<T>[];
  /** Below this width the table scrolls sideways (tablets); on a phone it becomes a stack of labelled cards. */
  minWidth?: number;
  /** data-testid of every row (the e2e and component tests find rows by it). */
  rowTestId?: string;
  rowOpacity?: (record: T) => number;
  onRowClick?: (record: T) => void;
  idAccessor?: string;
  fetching?: boolean;
  /** Cursor paging: the connection the records came from, and how to load its next page. */
  paging?: { connection: PagedConnection; onLoadMore: (endCursor: string) => void };
  /** Rows that open to show more (mantine-datatable's row expansion). */
  rowExpansion?: DataTableRowExpansionProps<T>;
  /** Rows with a checkbox (mantine-datatable's record selection): the selected records and their change. */
  selection?: { selected: readonly T[]; onChange: (records: T[]) => void };
  'aria-label'?: string;
}

/**
 * The console's one table (mantine-datatable): every cell carries its column's header as `data-label`, which
 * styles.css (`.cards-on-phone`) turns into "label … value" lines when a phone shows each row as a card.
 * Empty and loading states belong to the caller (QueryState); paging is "load more" on a cursor connection,
 * the pages merged by graphcache's relayPagination.
 */
export function DataTable<T>({ records, columns, minWidth = 0, rowTestId, rowOpacity, onRowClick, idAccessor = 'id', fetching, paging, rowExpansion, selection, ...rest }: DataTableProps<T>) {
  const mapped: DataTableColumn<T>[] = columns.map((column) => ({
    accessor: column.accessor,
    title: column.title,
    render: column.render,
    textAlign: column.textAlign ?? (column.title === '' ? 'right' : undefined),
    width: column.width,
    customCellAttributes: column.title ? () => ({ 'data-label': column.title }) : undefined,
  }));
  return (
    <div className="cards-on-phone" style={{ '--kf-table-min-width': `${minWidth}px` } as CSSProperties}>
      <MantineDataTable<T>
        records={records as T[]}
        columns={mapped}
        idAccessor={idAccessor}
        highlightOnHover={Boolean(onRowClick)}
        onRowClick={onRowClick ? ({ record, event }) => !(event.target as HTMLElement).closest('a, button, input, [role="combobox"]') && onRowClick(record) : undefined}
        customRowAttributes={rowTestId ? () => ({ 'data-testid': rowTestId }) : undefined}
        rowStyle={rowOpacity ? (record) => ({ opacity: rowOpacity(record) }) : undefined}
        styles={{ table: { minWidth: 'var(--kf-table-min-width)' } }}
        aria-label={rest['aria-label']}
        verticalAlign="center"
        rowExpansion={rowExpansion}
        {...(selection && { selectedRecords: selection.selected as T[], onSelectedRecordsChange: selection.onChange })}
      />
      {paging && <LoadMore shown={records.length} connection={paging.connection} busy={fetching} onLoadMore={paging.onLoadMore} />}
    </div>
  );
}

/** "Showing 40 of 57" and a button for the next page of a cursor connection. */
export function LoadMore({ shown, connection, busy, onLoadMore }: { shown: number; connection: PagedConnection; busy?: boolean; onLoadMore: (endCursor: string) => void }) {
  const total = `${connection.totalCount.toLocaleString('en-US')}${connection.totalCountCapped ? '+' : ''}`;
  const { hasNextPage, endCursor } = connection.pageInfo;
  return (
    <Group justify="space-between" p="sm" className="kf-pager">
      <Text size="sm" c="dimmed" aria-live="polite">
        {shown === 0 ? 'No results' : `Showing ${shown.toLocaleString('en-US')} of ${total}`}
      </Text>
      {hasNextPage && endCursor && (
        <Button variant="default" size="xs" loading={busy} onClick={() => onLoadMore(endCursor)}>
          Load more
        </Button>
      )}
    </Group>
  );
}
