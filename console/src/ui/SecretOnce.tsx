import { ActionIcon, Alert, Code, CopyButton, Group, Modal, Stack, Text, Tooltip } from '@mantine/core';
import { IconCheck, IconCopy, IconKey } from '@tabler/icons-react';
import type { ReactNode } from 'react';
import { ModalFooter } from './ModalFooter';

interface SecretOnceModalProps {
  /** The secret; the dialog is open while there is one. */
  secret: string | null;
  title: string;
  /** What it is, as said in a sentence: "API key", "signing secret", "license key". */
  label: string;
  /** How to keep and use it; by default, that only a short hint is kept. */
  note?: string;
  /** Closes the dialog (the close button, and Done unless `done` says otherwise). */
  onClose: () => void;
  /** The main button: "I have stored it" closing the dialog unless given. */
  done?: { label: string; onClick: () => void };
  /** Further buttons before the main one. */
  actions?: ReactNode;
  /** Shown above the secret (what happened, a warning). */
  before?: ReactNode;
  /** Shown below the secret (what happens next). */
  children?: ReactNode;
}

/**
 * A secret (API key, webhook signing secret, license key) shown once after it is made, with a copy button. Only a
 * button closes the dialog (not a click outside nor Escape): the secret cannot be shown again.
 */
export function SecretOnceModal({ secret, title, label, note, onClose, done, actions, before, children }: SecretOnceModalProps) {
  return (
    <Modal opened={secret !== null} onClose={onClose} title={title} centered size="lg" closeOnClickOutside={false} closeOnEscape={false}>
      {secret !== null && (
        <Stack>
          {before}
          <Alert color="yellow" variant="light" icon={<IconKey size={18} />} title={`Copy the ${label} now`}>
            <Stack gap="xs">
              <Text size="sm">{note ?? `This is the only time the ${label} is shown. Only a short hint is kept.`}</Text>
              <Group gap="xs" wrap="nowrap">
                <Code data-testid="secret-value" fz="sm" style={{ wordBreak: 'break-all', flex: 1 }}>
                  {secret}
                </Code>
                <CopyButton value={secret} timeout={2500}>
                  {({ copied, copy }) => (
                    <Tooltip label={copied ? 'Copied' : 'Copy'} withArrow>
                      <ActionIcon variant={copied ? 'filled' : 'light'} color={copied ? 'teal' : 'gray'} onClick={copy} aria-label={copied ? `${label} copied` : `Copy ${label}`} size="lg">
                        {copied ? <IconCheck size={18} /> : <IconCopy size={18} />}
                      </ActionIcon>
                    </Tooltip>
                  )}
                </CopyButton>
              </Group>
            </Stack>
          </Alert>
          {children}
          <ModalFooter confirmLabel={done?.label ?? 'I have stored it'} onConfirm={done?.onClick ?? onClose}>
            {actions}
          </ModalFooter>
        </Stack>
      )}
    </Modal>
  );
}
