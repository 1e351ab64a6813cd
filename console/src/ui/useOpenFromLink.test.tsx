import { render, screen } from '@testing-library/react';
import { useState } from 'react';
import { MemoryRouter, useLocation } from 'react-router';
import { describe, expect, it } from 'vitest';
import { useOpenFromLink } from './useOpenFromLink';

function Page() {
  const [opened, setOpened] = useState(0);
  useOpenFromLink(() => setOpened((count) => count + 1));
  const location = useLocation();
  return <p>{`opened ${opened} · ${location.pathname}${location.search}`}</p>;
}

describe('useOpenFromLink', () => {
  it('?new=1 opens the form once and leaves the other parameters in the address', () => {
    render(<MemoryRouter initialEntries={['/licenses?status=active&new=1']}><Page /></MemoryRouter>);
    expect(screen.getByText('opened 1 · /licenses?status=active')).toBeTruthy();
  });

  it('without it nothing opens', () => {
    render(<MemoryRouter initialEntries={['/licenses?status=active']}><Page /></MemoryRouter>);
    expect(screen.getByText('opened 0 · /licenses?status=active')).toBeTruthy();
  });
});
