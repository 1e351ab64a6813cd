import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../../../test/render';
import { ExpiringSoonPanel } from './ExpiringSoonPanel';

const NOW = new Date('2026-06-01T12:00:00.000Z');
const at = (days: number) => new Date(NOW.getTime() + days * 86_400_000).toISOString();

describe('<ExpiringSoonPanel>', () => {
  it('renders nothing when no license expires within 30 days', () => {
    renderUi(<ExpiringSoonPanel stats={{ expiringIn7Days: 0, expiringIn30Days: 0, expiringLicenses: [] }} />);
    expect(screen.queryByTestId('expiring-soon')).not.toBeInTheDocument();
    expect(screen.queryByText('Licenses Expiring Soon')).not.toBeInTheDocument();
  });

  it('shows the title, red and yellow badges, and linked rows with "in Nd"', () => {
    renderUi(
      <ExpiringSoonPanel
        stats={{
          expiringIn7Days: 1,
          expiringIn30Days: 2,
          expiringLicenses: [
            { id: 'lic-1', productName: 'Acme Studio', customerEmail: 'ada@example.com', expiresAt: at(3), daysUntilExpiry: 3 },
            { id: 'lic-2', productName: 'Acme Paint', customerEmail: null, expiresAt: at(19.5), daysUntilExpiry: 20 },
          ],
        }}
      />,
    );
    expect(screen.getByRole('heading', { name: 'Licenses Expiring Soon' })).toBeInTheDocument();
    const red = screen.getByTestId('badge-7-days');
    const yellow = screen.getByTestId('badge-30-days');
    expect(red).toHaveTextContent('1 within 7 days');
    expect(yellow).toHaveTextContent('2 within 30 days');
    expect(red.className + red.getAttribute('style')).toMatch(/red/);
    expect(yellow.className + yellow.getAttribute('style')).toMatch(/yellow/);

    const rows = screen.getAllByTestId('expiring-row');
    expect(rows).toHaveLength(2);
    expect(within(rows[0]).getByRole('link', { name: 'Acme Studio' })).toHaveAttribute('href', '/licenses/lic-1');
    expect(rows[0]).toHaveTextContent('ada@example.com');
    expect(rows[0]).toHaveTextContent('in 3d');
    expect(within(rows[1]).getByRole('link', { name: 'Acme Paint' })).toHaveAttribute('href', '/licenses/lic-2');
    expect(rows[1]).toHaveTextContent('in 20d');
  });

  it('caps the list at 8 rows and links to the rest', () => {
    const expiringLicenses = Array.from({ length: 11 }, (_, i) => ({ id: `l${i}`, productName: `P${i}`, customerEmail: `c${i}@x.test`, expiresAt: at(i + 1), daysUntilExpiry: i + 1 }));
    renderUi(<ExpiringSoonPanel stats={{ expiringIn7Days: 7, expiringIn30Days: 11, expiringLicenses }} />);
    expect(screen.getAllByTestId('expiring-row')).toHaveLength(8);
    expect(screen.getByRole('link', { name: /3 more expiring within 30 days/ })).toHaveAttribute('href', '/licenses?expiring=30');
  });
});
