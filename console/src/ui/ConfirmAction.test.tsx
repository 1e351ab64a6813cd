import { fireEvent, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { renderUi } from '../test/render';
import { ConfirmAction } from './ConfirmAction';

describe('ConfirmAction', () => {
  it('a disabled action says why, and cannot be confirmed', () => {
    const onConfirm = vi.fn(async () => true);
    renderUi(<ConfirmAction label="Delete" title="Delete?" message="Sure?" confirmLabel="Delete it" onConfirm={onConfirm} disabledReason="3 licenses use this product." />);
    const button = screen.getByRole('button', { name: 'Delete' }) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    expect(button.getAttribute('aria-description')).toBe('3 licenses use this product.');
    fireEvent.click(button);
    expect(screen.queryByText('Delete it')).toBeNull();
    expect(onConfirm).not.toHaveBeenCalled();
  });

  it('an enabled action asks first, then confirms', async () => {
    const onConfirm = vi.fn(async () => true);
    renderUi(<ConfirmAction label="Delete" title="Delete?" message="Sure?" confirmLabel="Delete it" onConfirm={onConfirm} />);
    fireEvent.click(screen.getByRole('button', { name: 'Delete' }));
    fireEvent.click(await screen.findByRole('button', { name: 'Delete it' }));
    expect(onConfirm).toHaveBeenCalledOnce();
  });
});
