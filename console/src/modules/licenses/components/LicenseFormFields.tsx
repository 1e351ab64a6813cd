import { Checkbox, Collapse, Group, NumberInput, Select, SimpleGrid, Stack, Switch, TagsInput, TextInput, UnstyledButton, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconChevronDown, IconChevronRight } from '@tabler/icons-react';
import type { LicenseForm } from '../licenseForm';
import { CustomFieldsEditor } from './CustomFieldsEditor';

interface Props {
  form: LicenseForm;
  onChange: (form: LicenseForm) => void;
  problems: Partial<Record<keyof LicenseForm, string>>;
  /** Product choices; omitted when editing (a license keeps its product). */
  products?: { value: string; label: string }[];
}

const numberValue = (value: string | number): number | '' => (value === '' ? '' : Number(value));

/** The license attributes, shared by the create and edit dialogs. */
export function LicenseFormFields({ form, onChange, problems, products }: Props) {
  const set = <K extends keyof LicenseForm>(key: K, value: LicenseForm[K]) => onChange({ ...form, [key]: value });
  const [advanced, { toggle }] = useDisclosure(Boolean(form.minVersion || form.maxVersion || form.floatingSeats !== '' || form.customFields.length));

  return (
    <Stack gap="sm">
      {products && (
        <Select label="Product" placeholder="Choose a product" required searchable data={products} value={form.productId || null} onChange={(value) => set('productId', value ?? '')} error={problems.productId} data-autofocus nothingFoundMessage="No products: create one first" />
      )}
      <SimpleGrid cols={{ base: 1, xs: 2 }} spacing="sm">
        <NumberInput label="Max activations" description="Devices that can hold a seat." required min={1} clampBehavior="none" allowDecimal={false} value={form.maxActivations} onChange={(value) => set('maxActivations', numberValue(value))} error={problems.maxActivations} />
        <TextInput label="Customer email" description="Optional; enables expiry emails to the customer." type="email" value={form.customerEmail} onChange={(e) => set('customerEmail', e.currentTarget.value)} error={problems.customerEmail} />
      </SimpleGrid>
      <SimpleGrid cols={{ base: 1, xs: 2 }} spacing="sm">
        <Stack gap={6}>
          <Checkbox label="Perpetual (never expires)" checked={form.perpetual} onChange={(e) => set('perpetual', e.currentTarget.checked)} mt={4} />
          <TextInput label="Expires on (UTC, end of day)" type="date" disabled={form.perpetual} required={!form.perpetual} value={form.expiresOn} onChange={(e) => set('expiresOn', e.currentTarget.value)} error={problems.expiresOn} />
        </Stack>
        <Stack gap={10} pt={4}>
          <Switch label="Trial" description="Validate reports trialDaysRemaining." checked={form.isTrial} onChange={(e) => set('isTrial', e.currentTarget.checked)} />
          <Switch label="Node-locked" description="Activations must send a deviceId." checked={form.nodeLocked} onChange={(e) => set('nodeLocked', e.currentTarget.checked)} />
        </Stack>
      </SimpleGrid>
      <TagsInput label="Features" description="Feature flags; press Enter after each." value={form.features} onChange={(value) => set('features', value)} clearable />
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
            <TextInput label="Minimum app version" placeholder="e.g. 2.0.0" value={form.minVersion} onChange={(e) => set('minVersion', e.currentTarget.value)} error={problems.minVersion} />
            <TextInput label="Maximum app version" placeholder="e.g. 3.9.9" value={form.maxVersion} onChange={(e) => set('maxVersion', e.currentTarget.value)} error={problems.maxVersion} />
            <NumberInput label="Offline grace (days)" description="Empty: no offline use." min={0} max={3650} clampBehavior="none" allowDecimal={false} value={form.offlineGraceDays} onChange={(value) => set('offlineGraceDays', numberValue(value))} error={problems.offlineGraceDays} />
            <NumberInput label="Grace after expiry (days)" description="Reported as isInGracePeriod." min={0} max={3650} clampBehavior="none" allowDecimal={false} value={form.gracePeriodDays} onChange={(value) => set('gracePeriodDays', numberValue(value))} error={problems.gracePeriodDays} />
            <NumberInput label="Floating seats" description="Concurrent sessions; empty: none." min={1} clampBehavior="none" allowDecimal={false} value={form.floatingSeats} onChange={(value) => set('floatingSeats', numberValue(value))} error={problems.floatingSeats} />
            <TextInput label="Maintenance until (UTC)" type="date" value={form.maintenanceOn} onChange={(e) => set('maintenanceOn', e.currentTarget.value)} />
          </SimpleGrid>
          <CustomFieldsEditor value={form.customFields} onChange={(value) => set('customFields', value)} error={problems.customFields} />
        </Stack>
      </Collapse>
    </Stack>
  );
}
