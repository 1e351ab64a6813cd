import { Modal, Stack, TextInput } from '@mantine/core';
import { useEffect } from 'react';
import { z } from 'zod';
import { ModalFooter } from '../../../ui/ModalFooter';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { readFragment } from '../../../graphql';
import { CreateReleaseMutation, ReleaseFields } from '../graphql/documents';
import { releaseAttributesSchema, SERVER_FIELD, toReleaseAttributes, type ReleaseAttributesForm } from '../releaseForm';
import { ReleaseAttributeFields } from './ReleaseAttributeFields';

const schema = releaseAttributesSchema.extend({ version: z.string().trim().min(1, 'Give a semantic version such as 1.4.0.') });

const initialValues = (): ReleaseAttributesForm & { version: string } => ({ version: '', channel: 'STABLE', notes: '', requiredFeatures: [], requiresMaintenance: false });

/** Creates a draft release of a product: files are uploaded to the draft, then it is published. */
export function NewReleaseModal({ productId, opened, onClose, onCreated }: { productId: string; opened: boolean; onClose: () => void; onCreated: () => void }) {
  const form = useZodForm(schema, initialValues());
  const { setValues, resetTouched, clearErrors } = form;
  useEffect(() => {
    if (!opened) return;
    setValues(initialValues());
    resetTouched();
    clearErrors();
  }, [opened, setValues, resetTouched, clearErrors]);
  const create = useApiMutation(CreateReleaseMutation, { success: (data) => `Draft ${readFragment(ReleaseFields, data.createRelease.release).version} was created: upload its files, then publish it.` });

  const submit = form.onSubmit(async (values) => {
    const done = await create.run({ input: { productId, version: values.version.trim(), ...toReleaseAttributes(values) } }, { form, rename: { ...SERVER_FIELD, 'input.version': 'version' } });
    if (done) {
      onClose();
      onCreated();
    }
  });

  return (
    <Modal opened={opened} onClose={onClose} title="New release" centered>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Version" required data-autofocus placeholder="1.4.0" description="Semantic version, unique for this product." {...form.getInputProps('version')} />
          <ReleaseAttributeFields form={form} />
          <ModalFooter onCancel={onClose} confirmLabel="Create draft" loading={create.saving} disabled={!form.getValues().version.trim()} />
        </Stack>
      </form>
    </Modal>
  );
}
