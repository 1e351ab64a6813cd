import { Button, Modal, Stack, Text, Tooltip, type ButtonProps } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import type { ReactNode } from 'react';
import { ModalFooter } from './ModalFooter';

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
  /** Why the action is not possible now: the button is disabled and says so (tooltip and accessible description). */
  disabledReason?: string | null;
}

/** A destructive or irreversible action behind a confirmation dialog. */
export function ConfirmAction({ label, title, message, confirmLabel, onConfirm, busy, danger = true, disabledReason, ...button }: ConfirmActionProps) {
  const [opened, { open, close }] = useDisclosure(false);
  const trigger = (
    <Button color={danger ? 'red' : undefined} variant="light" {...button} disabled={button.disabled || Boolean(disabledReason)} aria-description={disabledReason ?? undefined} onClick={open}>
      {label}
    </Button>
  );
  return (
    <>
      {disabledReason ? (
        <Tooltip label={disabledReason} multiline w={260} withArrow>
          {/* A disabled button gets no pointer events: the wrapper carries the tooltip. */}
          <span tabIndex={0}>{trigger}</span>
        </Tooltip>
      ) : (
        trigger
      )}
      <Modal opened={opened} onClose={close} title={title} centered>
        <Stack>
          {typeof message === 'string' ? <Text size="sm">{message}</Text> : message}
          <ModalFooter
            onCancel={close}
            danger={danger}
            loading={busy}
            autoFocus
            confirmLabel={confirmLabel}
            onConfirm={async () => {
              if (await onConfirm()) close();
            }}
          />
        </Stack>
      </Modal>
    </>
  );
}
