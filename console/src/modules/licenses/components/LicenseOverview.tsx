import { Badge, Code, Group, Paper, Progress, SimpleGrid, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { graphql, readFragment, type FragmentOf } from '../../../graphql';
import { formatDate, formatDateTime, graceText } from '../../../lib/format';
import { ExpiryText } from './LicenseStatus';

/** Everything the license page shows of a license (its header and actions read it too). */
export const LicenseDetailFields = graphql(`
  fragment LicenseDetailFields on License {
    id
    keyHint
    status
    customerEmail
    expiresAt
    daysUntilExpiry
    isTrial
    currentActivations
    maxActivations
    remainingActivations
    nodeLocked
    features
    customFields
    minVersion
    maxVersion
    offlineGraceDays
    gracePeriodDays
    floatingSeats
    maintenanceExpiresAt
    revokedAt
    suspendedAt
    createdAt
    updatedAt
    product {
      id
      name
    }
  }
`);

function Item({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Stack gap={2}>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <div>{children}</div>
    </Stack>
  );
}

const none = (
  <Text size="sm" c="dimmed">
    —
  </Text>
);

export function LicenseOverview({ license: ref }: { license: FragmentOf<typeof LicenseDetailFields> }) {
  const license = readFragment(LicenseDetailFields, ref);
  const used = license.currentActivations;
  const customFields = Object.entries((license.customFields ?? {}) as Record<string, string>);
  return (
    <Paper p="lg">
      <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="lg" verticalSpacing="md">
        <Item label="Seats">
          <Text size="sm" fw={600}>
            {used} of {license.maxActivations} used
          </Text>
          <Progress value={(used / Math.max(1, license.maxActivations)) * 100} size="sm" mt={4} color={license.remainingActivations === 0 ? 'red' : 'indigo'} aria-label="Seats used" />
        </Item>
        <Item label="Expires">
          <ExpiryText expiresAt={license.expiresAt} daysUntilExpiry={license.daysUntilExpiry} status={license.status} />
        </Item>
        <Item label="Customer">{license.customerEmail ? <Text size="sm">{license.customerEmail}</Text> : none}</Item>
        <Item label="Mode">
          <Group gap={4}>
            {(license.nodeLocked || license.floatingSeats === null) && (
              <Badge variant="light" color={license.nodeLocked ? 'grape' : 'gray'}>
                {license.nodeLocked ? 'node-locked' : 'count-based'}
              </Badge>
            )}
            {license.floatingSeats !== null && (
              <Badge variant="light" color="cyan">
                floating
              </Badge>
            )}
            {license.isTrial && (
              <Badge variant="light" color="violet">
                trial
              </Badge>
            )}
          </Group>
        </Item>
        <Item label="Features">
          {license.features.length ? (
            <Group gap={4}>
              {license.features.map((feature) => (
                <Badge key={feature} variant="outline" color="gray" tt="none">
                  {feature}
                </Badge>
              ))}
            </Group>
          ) : (
            none
          )}
        </Item>
        <Item label="App versions">
          <Text size="sm">{license.minVersion || license.maxVersion ? `${license.minVersion ?? 'any'} – ${license.maxVersion ?? 'any'}` : 'any'}</Text>
        </Item>
        <Item label="Offline grace · after expiry">
          <Text size="sm">
            {graceText(license.offlineGraceDays)} · {graceText(license.gracePeriodDays)}
          </Text>
        </Item>
        <Item label="Floating seats">
          <Text size="sm">{license.floatingSeats ?? 'none'}</Text>
        </Item>
        <Item label="Maintenance until">{license.maintenanceExpiresAt ? <Text size="sm">{formatDate(license.maintenanceExpiresAt)}</Text> : none}</Item>
        <Item label="Custom fields">
          {customFields.length ? (
            <Stack gap={2}>
              {customFields.map(([key, value]) => (
                <Text key={key} size="sm">
                  <Code>{key}</Code> {value}
                </Text>
              ))}
            </Stack>
          ) : (
            none
          )}
        </Item>
        <Item label="Created">
          <Text size="sm">{formatDateTime(license.createdAt)}</Text>
        </Item>
        <Item label={license.revokedAt ? 'Revoked' : license.suspendedAt ? 'Suspended' : 'Updated'}>
          <Text size="sm">{formatDateTime(license.revokedAt ?? license.suspendedAt ?? license.updatedAt)}</Text>
        </Item>
      </SimpleGrid>
    </Paper>
  );
}

