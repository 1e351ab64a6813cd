import { Box, Center, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { IconKey } from '@tabler/icons-react';
import type { ReactNode } from 'react';

/** The centred card of the signed-out pages (setup, sign-in). */
export function AuthCard({ title, subtitle, children, footer }: { title: string; subtitle?: ReactNode; children: ReactNode; footer?: ReactNode }) {
  return (
    <Center mih="100vh" p="md" bg="var(--mantine-color-gray-0)">
      <Box w="100%" maw={440}>
        <Group gap={8} justify="center" mb="lg">
          <IconKey size={26} color="var(--mantine-color-indigo-6)" aria-hidden />
          <Text fw={700} size="xl">
            Keyforge
          </Text>
        </Group>
        <Paper withBorder shadow="sm" radius="md" p="xl">
          <Stack gap="md">
            <Stack gap={4}>
              <Title order={2} size="h3">
                {title}
              </Title>
              {subtitle && (
                <Text size="sm" c="dimmed">
                  {subtitle}
                </Text>
              )}
            </Stack>
            {children}
          </Stack>
        </Paper>
        {footer && (
          <Text size="xs" c="dimmed" ta="center" mt="md">
            {footer}
          </Text>
        )}
      </Box>
    </Center>
  );
}

