import { MantineProvider } from '@mantine/core';
import { render } from '@testing-library/react';
import type { ReactElement } from 'react';
import { MemoryRouter } from 'react-router';
import { theme } from '../app/theme';

/** Renders inside the providers every console component expects (theme, router). */
export function renderUi(ui: ReactElement, { route = '/' }: { route?: string } = {}) {
  return render(
    <MantineProvider theme={theme} env="test">
      <MemoryRouter initialEntries={[route]}>{ui}</MemoryRouter>
    </MantineProvider>,
  );
}
