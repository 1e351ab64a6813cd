import { Checkbox, Collapse, Group, NumberInput, Select, SimpleGrid, Stack, Switch, TagsInput, TextInput, UnstyledButton, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconChevronDown, IconChevronRight } from '@tabler/icons-react';
import type { UseFormReturnType } from '@mantine/form';
import type { LicenseForm } from '../licenseForm';
import { CustomFieldsEditor } from './CustomFieldsEditor';

interface Props {
  form: UseFormReturnType<LicenseForm>;
  /** Product choices; omitted when editing (a license keeps its product). */
  products?: { value: string; label: string }[];
}

/** The license attributes (a @mantine/form checked by licenseFormSchema), shared by the create and edit dialogs. */
export function LicenseFormFields({ form, products }: Props) {
  const values = form.getValues();
  const field = (name: keyof LicenseForm) => form.getInputProps(name);
  const checkbox = (name: keyof LicenseForm) => form.getInputProps(name, { type: 'checkbox' });
  const [advanced, { toggle }] = useDisclosure(Boolean(values.minVersion || values.maxVersion || values.floatingSeats !== '' || values.customFields.length));

  return (
    <Stack gap="sm">
      {products && (
        <Select label="Product" placeholder="Choose a product" required searchable data={products} {...field('productId')} value={values.productId || null} onChange={(value) => form.setFieldValue('productId', value ?? '')} data-autofocus description={products.length === 0 ? 'No products yet: create one first.' : undefined} />
      )}
      <SimpleGrid cols={{ base: 1, xs: 2 }} spacing="sm">
        <NumberInput label="Max activations" description="Devices that can hold a seat." required min={1} clampBehavior="none" allowDecimal={false} {...field('maxActivations')} />
        <TextInput label="Customer email" description="Optional; enables expiry emails to the customer." type="email" {...field('customerEmail')} />
      </SimpleGrid>
      <SimpleGrid cols={{ base: 1, xs: 2 }} spacing="sm">
        <Stack gap={6}>
          <Checkbox label="Perpetual (never expires)" {...checkbox('perpetual')} mt={4} />
          <TextInput label="Expires on (UTC, end of day)" type="date" disabled={values.perpetual} required={!values.perpetual} {...field('expiresOn')} />
        </Stack>
        <Stack gap={10} pt={4}>
          <Switch label="Trial" description="Validate reports trialDaysRemaining." {...checkbox('isTrial')} />
          <Switch label="Node-locked" description="Activations must send a deviceId." {...checkbox('nodeLocked')} />
        </Stack>
      </SimpleGrid>
      <TagsInput label="Features" description="Feature flags; press Enter after each." {...field('features')} clearable />
      <UnstyledButton onClick={toggle} aria-expanded={advanced}>
        <Group gap={4}>
          {advanced ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
          <Text size="sm" fw={500}>
            Versions, grace periods, floating seats and custom fields
          </Text>
        </Group>
      </UnstyledButton>
      <Collapse in={advanced}>
        <Stack gap="sm">
          <SimpleGrid cols={{ base: 1, xs: 2 }} spacing="sm">
            <TextInput label="Minimum app version" placeholder="e.g. 2.0.0" {...field('minVersion')} />
            <TextInput label="Maximum app version" placeholder="e.g. 3.9.9" {...field('maxVersion')} />
            <NumberInput label="Offline grace (days)" description="Empty: no offline use." min={0} max={3650} clampBehavior="none" allowDecimal={false} {...field('offlineGraceDays')} />
            <NumberInput label="Grace after expiry (days)" description="Reported as isInGracePeriod." min={0} max={3650} clampBehavior="none" allowDecimal={false} {...field('gracePeriodDays')} />
            <NumberInput label="Floating seats" description="Concurrent sessions; empty: none." min={1} clampBehavior="none" allowDecimal={false} {...field('floatingSeats')} />
            <TextInput label="Maintenance until (UTC)" type="date" {...field('maintenanceOn')} />
          </SimpleGrid>
          <CustomFieldsEditor value={values.customFields} onChange={(value) => form.setFieldValue('customFields', value)} error={form.errors.customFields as string | undefined} />
        </Stack>
      </Collapse>
    </Stack>
  );
}
