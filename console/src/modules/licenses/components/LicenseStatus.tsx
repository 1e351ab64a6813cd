import { Badge, Text } from '@mantine/core';
import type { EnumOf } from '../../../graphql';
import { countdown, formatDate } from '../../../lib/format';

export type LicenseStatus = EnumOf<'LicenseStatus'>;

const COLORS: Record<LicenseStatus, string> = { ACTIVE: 'teal', EXPIRED: 'orange', SUSPENDED: 'violet', REVOKED: 'red' };

export function LicenseStatusBadge({ status, isTrial }: { status: LicenseStatus; isTrial?: boolean }) {
  return (
    <>
      <Badge color={COLORS[status]} variant="light" data-testid="license-status">
        {status.toLowerCase()}
      </Badge>
      {isTrial && (
        <Badge color="violet" variant="outline" ml={4}>
          trial
        </Badge>
      )}
    </>
  );
}

/** "Jun 11, 2026 · in 10d", "Perpetual", coloured when close. `daysUntilExpiry` is the server's countdown. */
export function ExpiryText({ expiresAt, daysUntilExpiry, status, now = new Date() }: { expiresAt: string | null; daysUntilExpiry: number | null; status: LicenseStatus; now?: Date }) {
  if (!expiresAt) {
    return (
      <Text size="sm" c="dimmed">
        Perpetual
      </Text>
    );
  }
  const days = daysUntilExpiry ?? 0;
  const past = new Date(expiresAt).getTime() <= now.getTime();
  const color = status !== 'ACTIVE' || past ? 'dimmed' : days <= 7 ? 'red.7' : days <= 30 ? 'yellow.8' : undefined;
  return (
    <Text size="sm" c={color} style={{ whiteSpace: 'nowrap' }}>
      {formatDate(expiresAt)}
      {!past && status === 'ACTIVE' && ` · ${countdown(days)}`}
    </Text>
  );
}
