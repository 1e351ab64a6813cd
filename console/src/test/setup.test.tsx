import { Button } from '@mantine/core';
import { act, fireEvent, screen } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, expect, it, vi } from 'vitest';
import { renderUi } from './render';

afterEach(() => vi.restoreAllMocks());

function LoadingToggle() {
  const [loading, setLoading] = useState(false);
  return (
    <Button loading={loading} onClick={() => setLoading((value) => !value)}>
      Load more
    </Button>
  );
}

// A transition's timer that outlives its test file fires after jsdom is gone ("window is not defined", an unhandled
// error that fails the whole run): the setup reports reduced motion, so Mantine's transitions schedule none.
it('the test setup leaves no Mantine transition timer behind', async () => {
  const realSetTimeout = window.setTimeout;
  const delays: number[] = [];
  vi.spyOn(window, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
    delays.push(ms ?? 0);
    return realSetTimeout(callback, ms);
  }) as typeof window.setTimeout);
  const settle = () => act(() => new Promise((resolve) => realSetTimeout(resolve, 50)));
  renderUi(<LoadingToggle />);
  await settle();
  fireEvent.click(screen.getByRole('button', { name: 'Load more' }));
  await settle();
  expect(screen.getByRole('button', { name: 'Load more' })).toHaveAttribute('data-loading');
  expect(delays.filter((ms) => ms > 0)).toEqual([]);
});
