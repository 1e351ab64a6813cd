import { Select, Switch, TagsInput, Textarea } from '@mantine/core';
import type { UseFormReturnType } from '@mantine/form';
import { CHANNELS } from '../../../lib/releaseChannels';
import type { ReleaseAttributesForm } from '../releaseForm';

/** Channel, notes, required features and the maintenance requirement: shared by the New release and Edit dialogs. */
export function ReleaseAttributeFields<T extends ReleaseAttributesForm>({ form }: { form: UseFormReturnType<T> }) {
  return (
    <>
      <Select label="Channel" data={CHANNELS.map((channel) => ({ ...channel }))} allowDeselect={false} description="A client following a channel sees it and every more stable one." {...form.getInputProps('channel')} />
      <Textarea label="Notes" autosize minRows={3} maxRows={8} description="Shown to applications with the release (Markdown is passed through as text)." {...form.getInputProps('notes')} />
      <TagsInput label="Required features" placeholder="Feature key, then Enter" description="A license must have all of them to see and download the release." {...form.getInputProps('requiredFeatures')} />
      <Switch
        label="Requires maintenance"
        description="A license whose maintenance ended before the release was published may not download it."
        {...form.getInputProps('requiresMaintenance', { type: 'checkbox' })}
      />
    </>
  );
}
