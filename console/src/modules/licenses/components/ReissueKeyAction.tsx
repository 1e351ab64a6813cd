import { Radio, Stack, Text } from '@mantine/core';
import { useState } from 'react';
import { formatDateTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { SecretOnceModal } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { ReissueLicenseKeyMutation } from '../graphql/documents';

/** How long the old key keeps working next to the new one (the server allows 0–168 hours). */
const OVERLAPS = [
  { hours: 0, label: 'Stop the old key now (lost or leaked key)' },
  { hours: 1, label: 'Keep the old key working for 1 hour' },
  { hours: 24, label: 'Keep the old key working for 24 hours' },
  { hours: 168, label: 'Keep the old key working for 7 days' },
];

/**
 * "Reissue key": a new key for the same license (its activations, history, quotas and usage stay), behind a
 * confirmation with the overlap choice; the new key is then shown once with a copy button.
 */
export function ReissueKeyAction({ license }: { license: { id: string; keyHint: string; product: { name: string } } }) {
  const reissue = useApiMutation(ReissueLicenseKeyMutation);
  const [overlapHours, setOverlapHours] = useState('0');
  const [reissued, setReissued] = useState<{ key: string; previousKeyValidUntil: string | null } | null>(null);
  const name = `${license.keyHint} (${license.product.name})`;

  return (
    <>
      <ConfirmAction
        label="Reissue key"
        color="orange"
        title="Reissue the key of this license?"
        message={
          <Stack gap="xs">
            <Text size="sm">
              {name} gets a new key, shown once. It stays the same license: its activations keep their seats, and its history, quotas and usage stay.
              Once the old key stops, it answers like an unknown key everywhere.
            </Text>
            <Radio.Group label="The old key" value={overlapHours} onChange={setOverlapHours}>
              <Stack gap={6} mt={6}>
                {OVERLAPS.map((overlap) => (
                  <Radio key={overlap.hours} value={String(overlap.hours)} label={overlap.label} />
                ))}
              </Stack>
            </Radio.Group>
          </Stack>
        }
        confirmLabel="Reissue key"
        busy={reissue.saving}
        onConfirm={async () => {
          const data = await reissue.run({ id: license.id, overlapHours: Number(overlapHours) });
          if (data) setReissued({ key: data.reissueLicenseKey.key, previousKeyValidUntil: data.reissueLicenseKey.previousKeyValidUntil as string | null });
          return data;
        }}
      />
      <SecretOnceModal secret={reissued?.key ?? null} title="New license key" label="license key" onClose={() => setReissued(null)} done={{ label: 'Done', onClick: () => setReissued(null) }}>
        <Text size="sm">
          {reissued?.previousKeyValidUntil ? `The old key keeps working until ${formatDateTime(reissued.previousKeyValidUntil)}; then only the new one does.` : 'The old key no longer works.'} Send the new key to your
          customer.
        </Text>
      </SecretOnceModal>
    </>
  );
}
