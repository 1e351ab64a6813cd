import { Button, Group, Modal, Stack, Text, type ButtonProps } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import type { ReactNode } from 'react';

interface ConfirmActionProps extends Omit<ButtonProps, 'children' | 'onClick'> {
  /** Label of the button that opens the dialog. */
  label: ReactNode;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  /** Resolves truthy when done (closes the dialog); null/false keeps it open (the error toast explains why). */
  onConfirm: () => Promise<unknown>;
  busy?: boolean;
  danger?: boolean;
}

/** A destructive or irreversible action behind a confirmation dialog. */
export function ConfirmAction({ label, title, message, confirmLabel, onConfirm, busy, danger = true, ...button }: ConfirmActionProps) {
  const [opened, { open, close }] = useDisclosure(false);
  return (
    <>
      <Button color={danger ? 'red' : undefined} variant="light" {...button} onClick={open}>
        {label}
      </Button>
      <Modal opened={opened} onClose={close} title={title} centered>
        <Stack>
          {typeof message === 'string' ? <Text size="sm">{message}</Text> : message}
          <Group justify="flex-end">
            <Button variant="default" onClick={close} disabled={busy}>
              Cancel
            </Button>
            <Button
              color={danger ? 'red' : undefined}
              loading={busy}
              data-autofocus
              onClick={async () => {
                if (await onConfirm()) close();
              }}
            >
              {confirmLabel}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
