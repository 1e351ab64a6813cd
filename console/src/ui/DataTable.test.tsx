import { fireEvent, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { renderUi } from '../test/render';
import { DataTable } from './DataTable';

const rows = [
  { id: 'a', product: 'Studio', expires: 'in 3d' },
  { id: 'b', product: 'Paint', expires: 'in 9d' },
];
const columns = [
  { accessor: 'product', title: 'Product' },
  { accessor: 'expires', title: 'Expires' },
  { accessor: 'actions', title: '', render: () => <button type="button">Open</button> },
];

describe('<DataTable>', () => {
  it('labels every cell with its column header for the phone cards (none for the actions column)', () => {
    const { container } = renderUi(<DataTable records={rows} columns={columns} rowTestId="row" />);
    expect(container.querySelector('.cards-on-phone')).not.toBeNull();
    expect(screen.getAllByTestId('row')).toHaveLength(2);
    const labels = [...container.querySelectorAll('tbody td')].map((cell) => cell.getAttribute('data-label'));
    expect(labels).toEqual(['Product', 'Expires', null, 'Product', 'Expires', null]);
  });

  it('opens a row on click, but not when a link or button inside it was clicked', () => {
    const onRowClick = vi.fn();
    renderUi(<DataTable records={rows} columns={columns} rowTestId="row" onRowClick={onRowClick} />);
    fireEvent.click(screen.getAllByRole('button', { name: 'Open' })[0]);
    expect(onRowClick).not.toHaveBeenCalled();
    fireEvent.click(screen.getByText('Paint'));
    expect(onRowClick).toHaveBeenCalledWith(rows[1]);
  });

  it('pages a cursor connection with "Load more" and counts what is shown', () => {
    const onLoadMore = vi.fn();
    const connection = { totalCount: 10_000, totalCountCapped: true, pageInfo: { hasNextPage: true, endCursor: 'cursor-2' } };
    const { unmount } = renderUi(<DataTable records={rows} columns={columns} paging={{ connection, onLoadMore }} />);
    expect(screen.getByText('Showing 2 of 10,000+')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Load more' }));
    expect(onLoadMore).toHaveBeenCalledWith('cursor-2');
    unmount();
    renderUi(<DataTable records={rows} columns={columns} paging={{ connection: { totalCount: 2, pageInfo: { hasNextPage: false, endCursor: 'x' } }, onLoadMore }} />);
    expect(screen.getByText('Showing 2 of 2')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Load more' })).toBeNull();
  });
});
