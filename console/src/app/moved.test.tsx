import { render, screen } from '@testing-library/react';
import { createMemoryRouter, RouterProvider, useLocation } from 'react-router';
import { describe, expect, it } from 'vitest';
import { MOVED_ADDRESSES, MovedTo } from './moved';
import { NAVIGATION } from './navigation';

function Where() {
  const { pathname, search, hash } = useLocation();
  return <p>{`at ${pathname}${search}${hash}`}</p>;
}

const SETTINGS_PAGES = ['/settings/team', '/settings/api-keys', '/settings/company', '/settings/webhooks', '/settings/payments', '/settings/profile'];

describe('one address scheme for settings', () => {
  it('every Settings entry of the navigation lives under /settings/', () => {
    const settings = NAVIGATION.find((section) => section.label === 'Settings')!;
    expect(settings.items.map((item) => item.to)).toEqual(SETTINGS_PAGES);
  });

  it.each(Object.entries(MOVED_ADDRESSES))('the old address %s redirects to %s, query and fragment kept', (from, to) => {
    const router = createMemoryRouter(
      [...SETTINGS_PAGES.map((path) => ({ path, element: <Where /> })), ...Object.entries(MOVED_ADDRESSES).map(([path, target]) => ({ path, element: <MovedTo to={target} /> }))],
      { initialEntries: [`${from}?tab=2#top`] },
    );
    render(<RouterProvider router={router} />);
    expect(screen.getByText(`at ${to}?tab=2#top`)).toBeTruthy();
  });
});
