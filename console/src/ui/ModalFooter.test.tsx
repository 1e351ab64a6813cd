import { fireEvent, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { renderUi } from '../test/render';
import { ModalFooter } from './ModalFooter';

describe('<ModalFooter>', () => {
  it('without onConfirm the main button submits the form; Cancel cancels', () => {
    const onSubmit = vi.fn((event: { preventDefault: () => void }) => event.preventDefault());
    const onCancel = vi.fn();
    renderUi(
      <form onSubmit={onSubmit}>
        <ModalFooter onCancel={onCancel} confirmLabel="Save" />
      </form>,
    );
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));
    expect(onSubmit).toHaveBeenCalledOnce();
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(onCancel).toHaveBeenCalledOnce();
  });

  it('with onConfirm it runs that and submits nothing', () => {
    const onSubmit = vi.fn((event: { preventDefault: () => void }) => event.preventDefault());
    const onConfirm = vi.fn();
    renderUi(
      <form onSubmit={onSubmit}>
        <ModalFooter onCancel={() => {}} onConfirm={onConfirm} confirmLabel="Verify" />
      </form>,
    );
    fireEvent.click(screen.getByRole('button', { name: 'Verify' }));
    expect(onConfirm).toHaveBeenCalledOnce();
    expect(onSubmit).not.toHaveBeenCalled();
  });

  it('while the action runs, Cancel waits', () => {
    renderUi(<ModalFooter onCancel={() => {}} onConfirm={() => {}} confirmLabel="Verify" loading />);
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeDisabled();
  });
});
