import { Alert, Anchor, Badge, Button, Code, Container, CopyButton, Divider, Group, Modal, Paper, Progress, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { IconDeviceDesktop, IconDownload, IconExternalLink, IconKey, IconMail } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import {
  ConfirmKeyMutation,
  DownloadLicenseFileMutation,
  errorMessage,
  fileNamePart,
  FreeDeviceMutation,
  LicensesQuery,
  saveTextFile,
  type Device,
  type License,
  type LicenseStatus,
  type Portal,
} from './api';
import { formatDate, plural, relativeTime } from '../lib/format';
import { DownloadsSection } from './DownloadsSection';
import { OfflineMachineModal } from './OfflineMachineModal';

// Dark enough for white text (WCAG AA) whatever the vendor's accent colour.
const STATUS: Record<LicenseStatus, { label: string; color: string }> = {
  ACTIVE: { label: 'Active', color: '#1e6b34' },
  EXPIRED: { label: 'Expired', color: '#9a3d00' },
  SUSPENDED: { label: 'Suspended', color: '#9a3d00' },
  REVOKED: { label: 'Revoked', color: '#b3261e' },
};
const NEUTRAL = '#495057';

const deviceLabel = (device: Device) => device.name ?? device.deviceId ?? 'this device';

/** The signed-in customer's licenses at this company. */
export function LicensesPage({ portal, email }: { portal: Portal; email: string }) {
  const [result, reload] = useQuery({ query: LicensesQuery });
  const licenses = result.data?.licenses;
  return (
    <Container size="md" py={{ base: 'md', sm: 'xl' }}>
      <Stack gap="lg">
        <div>
          <Title order={1} size="h2">
            Your licenses
          </Title>
          <Text c="dimmed" size="sm">
            Licenses from {portal.name} issued to {email}.
          </Text>
        </div>
        {result.error && (
          <Alert color="red" variant="light" title="Your licenses could not be loaded">
            <Stack gap="xs" align="flex-start">
              <Text size="sm">{errorMessage(result.error)}</Text>
              <Button size="xs" variant="default" onClick={() => reload({ requestPolicy: 'network-only' })}>
                Try again
              </Button>
            </Stack>
          </Alert>
        )}
        {licenses?.length === 0 && (
          <Paper p="xl">
            <Text>No licenses are issued to {email} any more.</Text>
          </Paper>
        )}
        {licenses?.map((license) => <LicenseCard key={license.id} license={license} portal={portal} />)}
        {licenses && licenses.length > 0 && <DownloadsSection />}
      </Stack>
    </Container>
  );
}

function Fact({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <div>{children}</div>
    </div>
  );
}

function LicenseCard({ license: initial, portal }: { license: License; portal: Portal }) {
  const [license, setLicense] = useState(initial);
  const [showKey, setShowKey] = useState(false);
  const status = STATUS[license.status];
  const seatShare = license.seatsTotal > 0 ? Math.min(100, (license.seatsUsed / license.seatsTotal) * 100) : 0;
  const titleId = `license-${license.id}`;
  return (
    <Paper p={{ base: 'md', sm: 'lg' }} shadow="xs" component="section" aria-labelledby={titleId}>
      <Stack gap="md">
        <Group justify="space-between" align="flex-start" gap="sm">
          <div>
            <Group gap="xs">
              <Title order={2} size="h3" id={titleId}>
                {license.productName}
              </Title>
              <Badge color={status.color} variant="filled">
                {status.label}
              </Badge>
              {license.isTrial && (
                <Badge color={NEUTRAL} variant="outline">
                  Trial
                </Badge>
              )}
            </Group>
            <Group gap={6} mt={4}>
              <Text size="sm" c="dimmed">
                Key
              </Text>
              <Code>{license.keyHint}</Code>
              <Anchor component="button" type="button" size="sm" onClick={() => setShowKey(true)}>
                Show my key
              </Anchor>
            </Group>
          </div>
          <Group gap="xs">
            {license.renewalUrl && (
              <Button component="a" href={license.renewalUrl} target="_blank" rel="noopener noreferrer" rightSection={<IconExternalLink size={16} aria-hidden />}>
                Renew
              </Button>
            )}
            {portal.supportEmail && (
              <Button
                component="a"
                variant="default"
                href={`mailto:${portal.supportEmail}?subject=${encodeURIComponent(`${license.productName} license ${license.keyHint}`)}`}
                leftSection={<IconMail size={16} aria-hidden />}
              >
                Contact support
              </Button>
            )}
          </Group>
        </Group>

        <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="md">
          <Fact label="Expires">
            <Text size="sm">{license.expiresAt ? formatDate(license.expiresAt) : 'Never'}</Text>
            {license.graceEndsAt && (
              <Text size="xs" c="dimmed">
                Keeps working until {formatDate(license.graceEndsAt)}
              </Text>
            )}
          </Fact>
          <Fact label="Seats">
            <Text size="sm">
              {license.seatsUsed} of {license.seatsTotal} used
            </Text>
            <Progress value={seatShare} size="sm" mt={6} aria-label={`${license.seatsUsed} of ${license.seatsTotal} seats used`} />
          </Fact>
          {license.floatingSeats !== null && (
            <Fact label="Floating pool">
              <Text size="sm">
                {license.floatingInUse} of {license.floatingSeats} in use
              </Text>
            </Fact>
          )}
          {license.maintenanceExpiresAt && (
            <Fact label="Updates until">
              <Text size="sm">{formatDate(license.maintenanceExpiresAt)}</Text>
            </Fact>
          )}
        </SimpleGrid>

        {license.features.length > 0 && (
          <Group gap={6}>
            {license.features.map((feature) => (
              <Badge key={feature} variant="outline" color={NEUTRAL} tt="none">
                {feature}
              </Badge>
            ))}
          </Group>
        )}

        <Divider />
        <Devices license={license} onChanged={setLicense} />
      </Stack>
      <KeyModal opened={showKey} onClose={() => setShowKey(false)} license={license} />
    </Paper>
  );
}

function allowanceText(license: License): string {
  const frees = license.deviceFrees;
  if (!frees) return 'To free a device of this product, contact support.';
  if (frees.remaining > 0) return `You can free ${plural(frees.remaining, 'more device')} in the next ${frees.windowDays} days (${frees.limit} per ${frees.windowDays} days).`;
  return `You have freed ${plural(frees.limit, 'device')} in the last ${frees.windowDays} days, the most allowed${frees.nextAt ? `: the next one from ${formatDate(frees.nextAt)}` : ''}.`;
}

function Devices({ license, onChanged }: { license: License; onChanged: (license: License) => void }) {
  const [freeing, setFreeing] = useState<Device | null>(null);
  const [free, send] = useMutation(FreeDeviceMutation);
  const [problem, setProblem] = useState<string | null>(null);
  const canFree = (license.deviceFrees?.remaining ?? 0) > 0;
  const [, issue] = useMutation(DownloadLicenseFileMutation);
  const [downloading, setDownloading] = useState<string | null>(null);
  const [offline, setOffline] = useState(false);

  /** A signed license file bound to the device, saved as <product>-<device>.lic. */
  const download = async (device: Device) => {
    setDownloading(device.id);
    const answer = await issue({ licenseId: license.id, deviceId: device.id });
    setDownloading(null);
    setProblem(errorMessage(answer.error));
    if (answer.data) saveTextFile(`${fileNamePart(license.productName)}-${fileNamePart(deviceLabel(device))}.lic`, answer.data.downloadLicenseFile.licenseFile);
  };

  const confirm = async () => {
    if (!freeing) return;
    const answer = await send({ id: freeing.id });
    setProblem(errorMessage(answer.error));
    if (answer.data) onChanged(answer.data.freeDevice.license);
    setFreeing(null);
  };

  return (
    <Stack gap="sm">
      <Group justify="space-between" align="flex-start" gap="xs">
        <div>
          <Title order={3} size="h5">
            Devices
          </Title>
          <Text size="sm" c="dimmed">
            {allowanceText(license)}
          </Text>
        </div>
        <Button size="xs" variant="light" onClick={() => setOffline(true)}>
          Machine without internet
        </Button>
      </Group>
      {problem && (
        <Alert color="red" variant="light" withCloseButton onClose={() => setProblem(null)} closeButtonLabel="Dismiss">
          {problem}
        </Alert>
      )}
      {license.devices.length === 0 && (
        <Text size="sm" c="dimmed">
          No device uses this license right now.
        </Text>
      )}
      <Stack gap={0} component="ul" style={{ listStyle: 'none', padding: 0, margin: 0 }}>
        {license.devices.map((device) => (
          <Group key={device.id} component="li" justify="space-between" wrap="nowrap" py="xs" style={{ borderTop: '1px solid var(--mantine-color-gray-2)' }}>
            <Group gap="sm" wrap="nowrap" style={{ minWidth: 0 }}>
              <IconDeviceDesktop size={22} stroke={1.5} aria-hidden style={{ flexShrink: 0 }} />
              <div style={{ minWidth: 0 }}>
                <Text size="sm" fw={600} truncate="end">
                  {deviceLabel(device)}
                </Text>
                <Text size="xs" c="dimmed">
                  Last seen {relativeTime(device.lastSeenAt)}
                  {device.version && ` · version ${device.version}`}
                </Text>
              </div>
            </Group>
            <Group gap={6} wrap="nowrap">
              <Button
                size="xs"
                variant="subtle"
                loading={downloading === device.id}
                onClick={() => void download(device)}
                leftSection={<IconDownload size={14} aria-hidden />}
                aria-label={`License file for ${deviceLabel(device)}`}
              >
                <Text span size="xs" fw={600} visibleFrom="sm">
                  License file
                </Text>
              </Button>
              {license.deviceFrees && (
                <Button size="xs" variant="default" disabled={!canFree} onClick={() => setFreeing(device)} aria-label={`Free ${deviceLabel(device)}`}>
                  Free
                </Button>
              )}
            </Group>
          </Group>
        ))}
      </Stack>
      <OfflineMachineModal opened={offline} onClose={() => setOffline(false)} license={license} onChanged={onChanged} />
      <Modal opened={freeing !== null} onClose={() => setFreeing(null)} title="Free this device?" centered closeButtonProps={{ 'aria-label': 'Close' }}>
        <Stack>
          <Text size="sm">
            <strong>{freeing?.name ?? freeing?.deviceId}</strong> gives its seat back. The application on it stops working until it is activated again.
          </Text>
          {license.deviceFrees && (
            <Text size="sm" c="dimmed">
              This uses 1 of your {license.deviceFrees.remaining} remaining frees for {license.productName}.
            </Text>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setFreeing(null)}>
              Cancel
            </Button>
            <Button color="red.8" loading={free.fetching} onClick={() => void confirm()}>
              Free device
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

/** The key is never sent to the page: the customer types it, the server confirms it is this license's, and it is shown. */
function KeyModal({ opened, onClose, license }: { opened: boolean; onClose: () => void; license: License }) {
  const [key, setKey] = useState('');
  const [confirmed, setConfirmed] = useState<string | null>(null);
  const [check, send] = useMutation(ConfirmKeyMutation);
  const [problem, setProblem] = useState<string | null>(null);
  const close = () => {
    setKey('');
    setConfirmed(null);
    setProblem(null);
    onClose();
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const answer = await send({ licenseId: license.id, key: key.trim() });
    if (answer.error) return setProblem(errorMessage(answer.error));
    if (answer.data?.confirmLicenseKey.matches) {
      setConfirmed(key.trim());
      setProblem(null);
    } else setProblem(`That is not the key of this license (it ends like ${license.keyHint}).`);
  };
  return (
    <Modal opened={opened} onClose={close} title="Your license key" centered closeButtonProps={{ 'aria-label': 'Close' }}>
      {confirmed ? (
        <Stack>
          <Alert color="green" variant="light" icon={<IconKey size={18} aria-hidden />}>
            This is the key of your {license.productName} license.
          </Alert>
          <Code block style={{ wordBreak: 'break-all' }}>
            {confirmed}
          </Code>
          <Group justify="flex-end">
            <CopyButton value={confirmed}>{({ copied, copy }) => <Button onClick={copy}>{copied ? 'Copied' : 'Copy key'}</Button>}</CopyButton>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={(event) => void submit(event)}>
          <Stack>
            <Text size="sm">
              For your security, the full key is not stored where it could be shown. Paste the key you received (it ends like <Code>{license.keyHint}</Code>) to check it is
              this license's.
            </Text>
            <TextInput label="License key" value={key} onChange={(event) => setKey(event.currentTarget.value)} autoComplete="off" spellCheck={false} required error={problem} />
            <Group justify="flex-end">
              <Button type="submit" loading={check.fetching}>
                Check key
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
