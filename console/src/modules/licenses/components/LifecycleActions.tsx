import { Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { useApiMutation } from '../../../ui/useApiMutation';
import { ReinstateLicenseMutation, RenewLicenseMutation, SuspendLicenseMutation, TransferLicenseMutation } from '../graphql/documents';
import { dayOf, endOfDay } from '../licenseForm';
import type { LicenseStatus } from './LicenseStatus';

export interface LifecycleLicense {
  id: string;
  keyHint: string;
  status: LicenseStatus;
  expiresAt: string | null;
  customerEmail: string | null;
  product: { name: string };
}

/** The day after `iso` (YYYY-MM-DD), or tomorrow when it has passed: the earliest renewal date the server accepts. */
export function earliestRenewal(expiresAt: string | null, now = new Date()): string {
  const base = expiresAt && Date.parse(expiresAt) > now.getTime() ? Date.parse(expiresAt) : now.getTime();
  return dayOf(new Date(base + 86_400_000).toISOString());
}

/**
 * Suspend / Reinstate / Renew / Transfer of one license, each behind a confirmation dialog (CompanyAdmins; the
 * page hides them for a revoked license: revocation is final). Renew takes a new expiry date (UTC end of day),
 * Transfer a customer email; the server's field errors show on the input.
 */
export function LifecycleActions({ license }: { license: LifecycleLicense }) {
  const suspend = useApiMutation(SuspendLicenseMutation, { success: 'License suspended. It answers "Suspended" until reinstated; its seats are kept.' });
  const reinstate = useApiMutation(ReinstateLicenseMutation, { success: 'License reinstated. It validates again.' });
  const renew = useApiMutation(RenewLicenseMutation, { success: 'License renewed. Expiry reminders will be sent for the new date.' });
  const transfer = useApiMutation(TransferLicenseMutation, { success: 'License transferred to the new customer email.' });
  const [renewOn, setRenewOn] = useState(() => earliestRenewal(license.expiresAt));
  const [renewError, setRenewError] = useState<string | null>(null);
  const [email, setEmail] = useState('');
  const [emailError, setEmailError] = useState<string | null>(null);
  const name = `${license.keyHint} (${license.product.name})`;
  if (license.status === 'REVOKED') return null;

  return (
    <>
      {license.status === 'SUSPENDED' ? (
        <ConfirmAction
          label="Reinstate"
          title="Reinstate this license?"
          message={`${name} will validate again on every device that holds a seat.`}
          confirmLabel="Reinstate license"
          danger={false}
          busy={reinstate.saving}
          onConfirm={() => reinstate.run({ id: license.id })}
        />
      ) : (
        <ConfirmAction
          label="Suspend"
          color="orange"
          title="Suspend this license?"
          message={`${name} will answer "Suspended" to validation, activation, floating and metering until you reinstate it. Its activations keep their seats, and its customer gets no expiry reminders meanwhile.`}
          confirmLabel="Suspend license"
          busy={suspend.saving}
          onConfirm={() => suspend.run({ id: license.id })}
        />
      )}
      {license.expiresAt !== null && (
        <ConfirmAction
          label="Renew"
          title="Renew this license"
          danger={false}
          message={
            <Stack gap="xs">
              <Text size="sm">
                {name} currently expires on {dayOf(license.expiresAt)}. Expiry reminders are sent again for the new date.
              </Text>
              <TextInput
                label="New expiry date (UTC, end of day)"
                type="date"
                min={earliestRenewal(license.expiresAt)}
                value={renewOn}
                error={renewError}
                onChange={(event) => {
                  setRenewOn(event.currentTarget.value);
                  setRenewError(null);
                }}
              />
            </Stack>
          }
          confirmLabel="Renew license"
          busy={renew.saving}
          onConfirm={async () => {
            if (!renewOn) return setRenewError('Pick the new expiry date.'), false;
            return renew.run({ id: license.id, expiresAt: endOfDay(renewOn) }, { form: { setErrors: (errors) => setRenewError(errors.expiresAt ?? null) } });
          }}
        />
      )}
      <ConfirmAction
        label="Transfer"
        title="Transfer this license"
        danger={false}
        message={
          <Stack gap="xs">
            <Text size="sm">
              Move {name} from {license.customerEmail ?? 'no customer email'} to another customer. Expiry reminders go to the new address.
            </Text>
            <TextInput
              label="New customer email"
              type="email"
              value={email}
              error={emailError}
              onChange={(event) => {
                setEmail(event.currentTarget.value);
                setEmailError(null);
              }}
            />
          </Stack>
        }
        confirmLabel="Transfer license"
        busy={transfer.saving}
        onConfirm={async () => {
          if (!email.trim()) return setEmailError('Enter the new customer email.'), false;
          return transfer.run({ id: license.id, customerEmail: email.trim() }, { form: { setErrors: (errors) => setEmailError(errors.customerEmail ?? null) } });
        }}
      />
    </>
  );
}
