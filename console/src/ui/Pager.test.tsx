import { fireEvent, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { renderUi } from '../test/render';
import { Pager } from './Pager';

const pages = (page: number) => ({ after: null, page, hasPrevious: page > 1, next: vi.fn(), previous: vi.fn(), reset: vi.fn() });
const connection = (shown: number, hasNextPage: boolean) => ({
  nodes: Array.from({ length: shown }, (_, i) => i),
  totalCount: 57,
  pageInfo: { hasNextPage, endCursor: 'cursor-2' },
});

describe('Pager', () => {
  it('shows the range of the current page and pages forward with the end cursor', () => {
    const state = pages(2);
    renderUi(<Pager pages={state} connection={connection(20, true)} pageSize={20} />);
    expect(screen.getByText('Showing 21–40 of 57')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Next' }));
    expect(state.next).toHaveBeenCalledWith('cursor-2');
    fireEvent.click(screen.getByRole('button', { name: 'Previous' }));
    expect(state.previous).toHaveBeenCalled();
  });

  it('disables Previous on the first page, Next on the last, both while loading', () => {
    const { unmount } = renderUi(<Pager pages={pages(1)} connection={connection(17, false)} pageSize={20} />);
    expect((screen.getByRole('button', { name: 'Previous' }) as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByRole('button', { name: 'Next' }) as HTMLButtonElement).disabled).toBe(true);
    unmount();
    renderUi(<Pager pages={pages(2)} connection={connection(20, true)} pageSize={20} busy />);
    expect((screen.getByRole('button', { name: 'Next' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('shows a capped count as "10,000+"', () => {
    renderUi(<Pager pages={pages(1)} connection={{ ...connection(20, true), totalCount: 10_000, totalCountCapped: true }} pageSize={20} />);
    expect(screen.getByText('Showing 1–20 of 10,000+')).toBeTruthy();
  });

  it('says so when there are no results', () => {
    renderUi(<Pager pages={pages(1)} connection={{ ...connection(0, false), totalCount: 0 }} pageSize={20} />);
    expect(screen.getByText('No results')).toBeTruthy();
  });
});
