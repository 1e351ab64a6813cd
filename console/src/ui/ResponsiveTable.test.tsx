import { Table } from '@mantine/core';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../test/render';
import { ResponsiveTable } from './ResponsiveTable';

function Rows() {
  const [products, setProducts] = useState(['Studio']);
  return (
    <>
      <button type="button" onClick={() => setProducts([...products, 'Paint'])}>
        Add
      </button>
      <ResponsiveTable minWidth={600}>
      <Table>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Product</Table.Th>
            <Table.Th>Expires</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {products.map((product) => (
            <Table.Tr key={product}>
              <Table.Td>{product}</Table.Td>
              <Table.Td>in 3 days</Table.Td>
              <Table.Td>
                <button type="button">Open</button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      </ResponsiveTable>
    </>
  );
}

describe('ResponsiveTable', () => {
  it('labels every cell with its column header, also for rows added later', async () => {
    const { container } = renderUi(<Rows />);
    const labels = () => [...container.querySelectorAll('tbody td')].map((cell) => cell.getAttribute('data-label'));
    expect(container.querySelector('.cards-on-phone')).not.toBeNull();
    await waitFor(() => expect(labels()).toEqual(['Product', 'Expires', null]));
    fireEvent.click(screen.getByRole('button', { name: 'Add' }));
    await waitFor(() => expect(labels()).toEqual(['Product', 'Expires', null, 'Product', 'Expires', null]));
  });
});
