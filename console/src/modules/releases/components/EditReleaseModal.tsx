import { Modal, Stack } from '@mantine/core';
import { useEffect } from 'react';
import { changedFields } from '../../../lib/changes';
import { ModalFooter } from '../../../ui/ModalFooter';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { UpdateReleaseMutation, type Release } from '../graphql/documents';
import type { ReleaseChannel } from '../../../lib/releaseChannels';
import { releaseAttributesSchema, SERVER_FIELD, toReleaseAttributes, type ReleaseAttributesForm } from '../releaseForm';
import { ReleaseAttributeFields } from './ReleaseAttributeFields';

const toForm = (release: Release | null): ReleaseAttributesForm => ({
  channel: (release?.channel ?? 'STABLE') as ReleaseChannel,
  notes: release?.notes ?? '',
  requiredFeatures: [...(release?.requiredFeatures ?? [])],
  requiresMaintenance: release?.requiresMaintenance ?? false,
});

/**
 * Edits a draft's or published release's channel, notes and requirements (updateRelease; the version is fixed and a
 * yanked release stays as it was). Only the changed attributes are sent.
 */
export function EditReleaseModal({ release, onClose, onSaved }: { release: Release | null; onClose: () => void; onSaved: () => void }) {
  const form = useZodForm(releaseAttributesSchema, toForm(release));
  const { setInitialValues, setValues, resetTouched, clearErrors } = form;
  useEffect(() => {
    if (!release) return;
    setInitialValues(toForm(release));
    setValues(toForm(release));
    resetTouched();
    clearErrors();
  }, [release, setInitialValues, setValues, resetTouched, clearErrors]);
  const update = useApiMutation(UpdateReleaseMutation, { success: `${release?.version ?? 'The release'} was saved.` });

  const submit = form.onSubmit(async (values) => {
    if (!release) return;
    const changes = changedFields(toReleaseAttributes(toForm(release)), toReleaseAttributes(values));
    if (Object.keys(changes).length === 0) return onClose();
    if (await update.run({ input: { id: release.id, ...changes } }, { form, rename: SERVER_FIELD })) {
      onClose();
      onSaved();
    }
  });

  return (
    <Modal opened={release !== null} onClose={onClose} title={release ? `Edit ${release.version}` : 'Edit release'} centered>
      <form onSubmit={submit} noValidate>
        <Stack>
          <ReleaseAttributeFields form={form} />
          <ModalFooter onCancel={onClose} confirmLabel="Save changes" loading={update.saving} />
        </Stack>
      </form>
    </Modal>
  );
}
