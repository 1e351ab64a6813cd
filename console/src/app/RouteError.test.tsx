import { MantineProvider } from '@mantine/core';
import { render, screen } from '@testing-library/react';
import { RouterProvider, createMemoryRouter } from 'react-router';
import { describe, expect, it, vi } from 'vitest';
import { RouteError } from './RouteError';
import { theme } from './theme';

function Broken(): never {
  throw new TypeError("Cannot read properties of null (reading 'emails')");
}

describe('RouteError', () => {
  it('a page that throws shows what happened and a way on, instead of the router default', () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const router = createMemoryRouter(
      [{ path: '/broken', element: <Broken />, errorElement: <RouteError /> }],
      { initialEntries: ['/broken'] },
    );
    render(
      <MantineProvider theme={theme} env="test">
        <RouterProvider router={router} />
      </MantineProvider>,
    );
    expect(screen.getByText('This page could not be shown')).toBeTruthy();
    expect(screen.getByText("Cannot read properties of null (reading 'emails')")).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Go to the dashboard' }).getAttribute('href')).toBe('/');
    expect(screen.queryByText(/Unexpected Application Error/)).toBeNull();
  });
});
