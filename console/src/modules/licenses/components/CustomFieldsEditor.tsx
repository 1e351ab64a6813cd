import { ActionIcon, Button, Group, Input, Stack, TextInput } from '@mantine/core';
import { IconPlus, IconTrash } from '@tabler/icons-react';

type Field = { key: string; value: string };

/** Key/value pairs returned to applications as customFields. */
export function CustomFieldsEditor({ value, onChange, error }: { value: Field[]; onChange: (fields: Field[]) => void; error?: string }) {
  const update = (index: number, patch: Partial<Field>) => onChange(value.map((field, i) => (i === index ? { ...field, ...patch } : field)));
  return (
    <Input.Wrapper label="Custom fields" description="Key/value strings returned by validate, e.g. plan = pro." error={error}>
      <Stack gap={6} mt={6}>
        {value.map((field, index) => (
          <Group key={index} gap={6} wrap="nowrap">
            <TextInput aria-label={`Custom field ${index + 1} name`} placeholder="name" value={field.key} onChange={(e) => update(index, { key: e.currentTarget.value })} style={{ flex: 1 }} />
            <TextInput aria-label={`Custom field ${index + 1} value`} placeholder="value" value={field.value} onChange={(e) => update(index, { value: e.currentTarget.value })} style={{ flex: 1 }} />
            <ActionIcon variant="subtle" color="gray" aria-label={`Remove custom field ${index + 1}`} onClick={() => onChange(value.filter((_, i) => i !== index))}>
              <IconTrash size={16} />
            </ActionIcon>
          </Group>
        ))}
        <Group>
          <Button variant="subtle" size="xs" leftSection={<IconPlus size={14} />} onClick={() => onChange([...value, { key: '', value: '' }])}>
            Add field
          </Button>
        </Group>
      </Stack>
    </Input.Wrapper>
  );
}
