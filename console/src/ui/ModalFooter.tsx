import { Button, Group } from '@mantine/core';
import type { ReactNode } from 'react';

interface ModalFooterProps {
  /** The main button. It submits the dialog's form unless `onConfirm` is given. */
  confirmLabel: ReactNode;
  onConfirm?: () => unknown;
  /** The action runs: the main button spins and Cancel waits. */
  loading?: boolean;
  disabled?: boolean;
  danger?: boolean;
  /** 'default' when the main button is only a way out (Close while a job goes on). */
  variant?: 'filled' | 'default';
  /** A Cancel button before the main one. */
  onCancel?: () => void;
  /** Further buttons between Cancel and the main one. */
  children?: ReactNode;
  /** Focus the main button when the dialog opens (confirmations, where there is no field to fill). */
  autoFocus?: boolean;
}

/** The button row of every dialog: Cancel, any other buttons, then the main action, on the right. */
export function ModalFooter({ confirmLabel, onConfirm, loading, disabled, danger, variant = 'filled', onCancel, children, autoFocus }: ModalFooterProps) {
  return (
    <Group justify="flex-end">
      {onCancel && (
        <Button variant="default" onClick={onCancel} disabled={loading}>
          Cancel
        </Button>
      )}
      {children}
      <Button
        type={onConfirm ? 'button' : 'submit'}
        color={danger ? 'red' : undefined}
        variant={variant}
        loading={loading}
        disabled={disabled}
        data-autofocus={autoFocus || undefined}
        onClick={onConfirm ? () => void onConfirm() : undefined}
      >
        {confirmLabel}
      </Button>
    </Group>
  );
}
