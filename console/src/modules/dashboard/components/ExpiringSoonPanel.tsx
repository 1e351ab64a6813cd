import { Anchor, Badge, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { IconAlertTriangle } from '@tabler/icons-react';
import { Link } from 'react-router';
import { formatDate } from '../../../lib/format';
import { expiringSoonView, type ExpiryStats } from '../expiringSoon';
import { DataTable } from '../../../ui/DataTable';

/** "Licenses Expiring Soon" (docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`"): renders nothing when no active license expires within 30 days. */
export function ExpiringSoonPanel({ stats }: { stats: ExpiryStats }) {
  const view = expiringSoonView(stats);
  if (!view) return null;
  return (
    <Paper p="lg" component="section" aria-labelledby="expiring-soon-title" data-testid="expiring-soon">
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap" gap="xs">
          <Group gap={8}>
            <IconAlertTriangle size={20} color="var(--mantine-color-orange-6)" aria-hidden />
            <Title order={3} size="h4" id="expiring-soon-title">
              Licenses Expiring Soon
            </Title>
          </Group>
          <Group gap={6}>
            <Badge color="red" variant="filled" data-testid="badge-7-days">
              {view.within7Days} within 7 days
            </Badge>
            <Badge color="yellow" variant="filled" c="dark" data-testid="badge-30-days">
              {view.within30Days} within 30 days
            </Badge>
          </Group>
        </Group>
        <DataTable
          records={view.rows}
          minWidth={460}
          rowTestId="expiring-row"
          columns={[
            {
              accessor: 'productName',
              title: 'Product',
              render: (row) => (
                <Anchor component={Link} to={row.href} fw={500} size="sm">
                  {row.productName}
                </Anchor>
              ),
            },
            {
              accessor: 'customerEmail',
              title: 'Customer',
              render: (row) => (
                <Text size="sm" c={row.customerEmail ? undefined : 'dimmed'}>
                  {row.customerEmail ?? 'no customer email'}
                </Text>
              ),
            },
            {
              accessor: 'countdown',
              title: 'Expires',
              textAlign: 'right',
              render: (row) => (
                <Text size="sm" fw={600} c={row.urgent ? 'red.7' : 'yellow.8'} title={formatDate(row.expiresAt)}>
                  {row.countdown}
                </Text>
              ),
            },
          ]}
        />
        {view.more > 0 && (
          <Anchor component={Link} to="/licenses?expiring=30" size="sm">
            {view.more} more expiring within 30 days →
          </Anchor>
        )}
      </Stack>
    </Paper>
  );
}
