import { ActionIcon, Alert, Code, CopyButton, Group, Stack, Text, Tooltip } from '@mantine/core';
import { IconCheck, IconCopy, IconKey } from '@tabler/icons-react';

/** A secret (license key, API key) shown once after creation, with a copy button. */
export function SecretOnce({ label, value, note }: { label: string; value: string; note?: string }) {
  return (
    <Alert color="yellow" variant="light" icon={<IconKey size={18} />} title={`Copy the ${label} now`}>
      <Stack gap="xs">
        <Text size="sm">{note ?? `This is the only time the ${label} is shown. Only a short hint is kept.`}</Text>
        <Group gap="xs" wrap="nowrap">
          <Code data-testid="secret-value" fz="sm" style={{ wordBreak: 'break-all', flex: 1 }}>
            {value}
          </Code>
          <CopyButton value={value} timeout={2500}>
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
  );
}
