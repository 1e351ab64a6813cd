import { Modal, Select, Stack, Switch, TagsInput, Textarea, TextInput } from '@mantine/core';
import { useEffect } from 'react';
import { z } from 'zod';
import { ModalFooter } from '../../../ui/ModalFooter';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { readFragment } from '../../../graphql';
import { CHANNELS, type ReleaseChannel } from '../../../lib/releaseChannels';
import { CreateReleaseMutation, ReleaseFields } from '../graphql/documents';

const schema = z.object({
  version: z.string().trim().min(1, 'Give a semantic version such as 1.4.0.'),
  channel: z.enum(['STABLE', 'RC', 'BETA', 'ALPHA', 'DEV']),
  notes: z.string(),
  requiredFeatures: z.array(z.string()),
  requiresMaintenance: z.boolean(),
});

const initialValues = () => ({ version: '', channel: 'STABLE' as ReleaseChannel, notes: '', requiredFeatures: [] as string[], requiresMaintenance: false });

/** Creates a draft release of a product: files are uploaded to the draft, then it is published. */
export function NewReleaseModal({ productId, opened, onClose }: { productId: string; opened: boolean; onClose: () => void }) {
  const form = useZodForm(schema, initialValues());
  const { setValues, resetTouched, clearErrors } = form;
  useEffect(() => {
    if (!opened) return;
    setValues(initialValues());
    resetTouched();
    clearErrors();
  }, [opened, setValues, resetTouched, clearErrors]);
  const create = useApiMutation(CreateReleaseMutation, { success: (data) => `Draft ${readFragment(ReleaseFields, data.createRelease.release).version} was created: upload its files, then publish it.` });

  const submit = form.onSubmit(async ({ version, channel, notes, requiredFeatures, requiresMaintenance }) => {
    const done = await create.run(
      { input: { productId, version: version.trim(), channel, notes: notes.trim() || null, requiredFeatures, requiresMaintenance } },
      { form, rename: { 'input.version': 'version', 'input.channel': 'channel', 'input.notes': 'notes', 'input.requiredFeatures': 'requiredFeatures' } },
    );
    if (done) onClose();
  });

  return (
    <Modal opened={opened} onClose={onClose} title="New release" centered>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Version" required data-autofocus placeholder="1.4.0" description="Semantic version, unique for this product." {...form.getInputProps('version')} />
          <Select label="Channel" data={CHANNELS.map((channel) => ({ ...channel }))} allowDeselect={false} description="A client following a channel sees it and every more stable one." {...form.getInputProps('channel')} />
          <Textarea label="Notes" autosize minRows={3} maxRows={8} description="Shown to applications with the release (Markdown is passed through as text)." {...form.getInputProps('notes')} />
          <TagsInput label="Required features" placeholder="Feature key, then Enter" description="A license must have all of them to see and download the release." {...form.getInputProps('requiredFeatures')} />
          <Switch
            label="Requires maintenance"
            description="A license whose maintenance ended before the release was published may not download it."
            {...form.getInputProps('requiresMaintenance', { type: 'checkbox' })}
          />
          <ModalFooter onCancel={onClose} confirmLabel="Create draft" loading={create.saving} disabled={!form.getValues().version.trim()} />
        </Stack>
      </form>
    </Modal>
  );
}
