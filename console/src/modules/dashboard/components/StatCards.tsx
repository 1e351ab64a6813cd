import { Group, Paper, SimpleGrid, Text, ThemeIcon } from '@mantine/core';
import { IconDevices, IconLicense, IconPackage, IconShieldCheck, type Icon } from '@tabler/icons-react';
import { Link } from 'react-router';
import { formatNumber } from '../../../lib/format';

interface Stats {
  activeLicenses: number;
  totalLicenses: number;
  activations: number;
  products: number;
}

const CARDS: { key: keyof Stats; label: string; hint: string; icon: Icon; color: string; to: string }[] = [
  { key: 'activeLicenses', label: 'Active licenses', hint: 'valid right now', icon: IconShieldCheck, color: 'teal', to: '/licenses?status=active' },
  { key: 'totalLicenses', label: 'Total licenses', hint: 'all statuses', icon: IconLicense, color: 'indigo', to: '/licenses' },
  { key: 'activations', label: 'Seats in use', hint: 'active installations', icon: IconDevices, color: 'grape', to: '/analytics' },
  { key: 'products', label: 'Products', hint: 'including bundles', icon: IconPackage, color: 'orange', to: '/products' },
];

export function StatCards({ stats }: { stats: Stats }) {
  return (
    <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="md">
      {CARDS.map((card) => (
        <Paper key={card.key} p="md" component={Link} to={card.to} className="stat-card" aria-label={`${card.label}: ${stats[card.key]}`}>
          <Group justify="space-between" align="flex-start" wrap="nowrap">
            <div>
              <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
                {card.label}
              </Text>
              <Text fz={28} fw={700} lh={1.2} data-testid={`stat-${card.key}`}>
                {formatNumber(stats[card.key])}
              </Text>
              <Text size="xs" c="dimmed">
                {card.hint}
              </Text>
            </div>
            <ThemeIcon variant="light" color={card.color} size={38} radius="md">
              <card.icon size={20} />
            </ThemeIcon>
          </Group>
        </Paper>
      ))}
    </SimpleGrid>
  );
}
