import { Button, Group, Modal, Stack } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { useApiMutation } from '../../../ui/useApiMutation';
import { UpdateLicenseMutation } from '../graphql/documents';
import { changedAttributes, formProblems, licenseToForm, toLicenseAttributes, validateLicenseForm, type LicenseLike } from '../licenseForm';
import { LicenseFormFields } from './LicenseFormFields';

/** Edits a license's attributes; only the changed ones are sent. */
export function EditLicenseModal({ license, opened, onClose }: { license: LicenseLike & { id: string }; opened: boolean; onClose: () => void }) {
  const [form, setForm] = useState(() => licenseToForm(license));
  const [submitted, setSubmitted] = useState(false);
  useEffect(() => {
    if (opened) {
      setForm(licenseToForm(license));
      setSubmitted(false);
    }
  }, [opened, license]);
  const update = useApiMutation(UpdateLicenseMutation, { success: 'License saved.' });
  const problems = formProblems(validateLicenseForm(form, { requireProduct: false }), update.fieldErrors, submitted);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSubmitted(true);
    if (Object.keys(validateLicenseForm(form, { requireProduct: false })).length) return;
    const changes = changedAttributes(toLicenseAttributes(licenseToForm(license)), toLicenseAttributes(form));
    if (Object.keys(changes).length === 0) return onClose();
    if (await update.run({ input: { id: license.id, ...changes } })) onClose();
  };

  return (
    <Modal opened={opened} onClose={onClose} title="Edit license" size="lg" centered>
      <form onSubmit={submit} noValidate>
        <Stack>
          <LicenseFormFields form={form} onChange={setForm} problems={problems} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={update.saving}>
              Save changes
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
