import { Modal, Stack } from '@mantine/core';
import { useEffect } from 'react';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { UpdateLicenseMutation } from '../graphql/documents';
import { changedAttributes, licenseFormSchema, licenseToForm, SERVER_FIELD, toLicenseAttributes, type LicenseForm, type LicenseLike } from '../licenseForm';
import { LicenseFormFields } from './LicenseFormFields';
import { ModalFooter } from '../../../ui/ModalFooter';

const schema = licenseFormSchema({ requireProduct: false });

/** Edits a license's attributes; only the changed ones are sent. */
export function EditLicenseModal({ license, opened, onClose }: { license: LicenseLike & { id: string }; opened: boolean; onClose: () => void }) {
  const form = useZodForm<LicenseForm>(schema, licenseToForm(license));
  const { setInitialValues, setValues, resetTouched, clearErrors } = form;
  useEffect(() => {
    if (opened) {
      setInitialValues(licenseToForm(license));
      setValues(licenseToForm(license));
      resetTouched();
      clearErrors();
    }
  }, [opened, license, setInitialValues, setValues, resetTouched, clearErrors]);
  const update = useApiMutation(UpdateLicenseMutation, { success: 'License saved.' });

  const submit = form.onSubmit(async (values) => {
    const changes = changedAttributes(toLicenseAttributes(licenseToForm(license)), toLicenseAttributes(values));
    if (Object.keys(changes).length === 0) return onClose();
    if (await update.run({ input: { id: license.id, ...changes } }, { form, rename: SERVER_FIELD })) onClose();
  });

  return (
    <Modal opened={opened} onClose={onClose} title="Edit license" size="lg" centered>
      <form onSubmit={submit} noValidate>
        <Stack>
          <LicenseFormFields form={form} />
          <ModalFooter onCancel={onClose} confirmLabel="Save changes" loading={update.saving} />
        </Stack>
      </form>
    </Modal>
  );
}
