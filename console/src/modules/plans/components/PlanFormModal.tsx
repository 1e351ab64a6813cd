import { Group, Modal, NumberInput, Select, Stack, Switch, TagsInput, TextInput } from '@mantine/core';
import { useEffect } from 'react';
import { z } from 'zod';
import { ModalFooter } from '../../../ui/ModalFooter';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { CreatePlanMutation, UpdatePlanMutation, type Plan } from '../graphql/documents';

/** The date part of an ISO 8601 duration, as the server reads it (it has the last word, per field). */
const PERIOD = /^P(\d{1,5}Y)?(\d{1,5}M)?(\d{1,5}W)?(\d{1,5}D)?$/i;
const period = z
  .string()
  .trim()
  .refine((text) => text === '' || (text.length > 1 && PERIOD.test(text)), 'A period such as P1Y, P6M, P2W or P30D.');
const optionalCount = z.union([z.number().int().min(0), z.literal('')]);

export const planFormSchema = z.object({
  productId: z.string().min(1, 'Pick the product.'),
  name: z.string().trim().min(1, 'Name the plan.'),
  duration: period,
  maxActivations: z.number({ message: 'How many devices?' }).int().min(1, 'At least 1.'),
  floatingSeats: optionalCount,
  gracePeriodDays: optionalCount,
  offlineGraceDays: optionalCount,
  maintenancePeriod: period,
  features: z.array(z.string()),
  isTrial: z.boolean(),
  nodeLocked: z.boolean(),
});
type PlanForm = z.infer<typeof planFormSchema>;

const valuesOf = (plan: Plan | undefined, productId: string | undefined): PlanForm => ({
  productId: plan?.product.id ?? productId ?? '',
  name: plan?.name ?? '',
  duration: plan?.duration ?? 'P1Y',
  maxActivations: plan?.maxActivations ?? 1,
  floatingSeats: plan?.floatingSeats ?? '',
  gracePeriodDays: plan?.gracePeriodDays ?? '',
  offlineGraceDays: plan?.offlineGraceDays ?? '',
  maintenancePeriod: plan?.maintenancePeriod ?? '',
  features: plan?.features ?? [],
  isTrial: plan?.isTrial ?? false,
  nodeLocked: plan?.nodeLocked ?? false,
});

/** The form as the API's plan fields: an empty period or count is null (perpetual, none). */
export function planInput(form: PlanForm) {
  const orNull = <T,>(value: T | '') => (value === '' ? null : value);
  return {
    name: form.name.trim(),
    duration: orNull(form.duration.trim().toUpperCase()),
    maxActivations: form.maxActivations,
    floatingSeats: orNull(form.floatingSeats),
    gracePeriodDays: orNull(form.gracePeriodDays),
    offlineGraceDays: orNull(form.offlineGraceDays),
    maintenancePeriod: orNull(form.maintenancePeriod.trim().toUpperCase()),
    features: form.features,
    isTrial: form.isTrial,
    nodeLocked: form.nodeLocked,
  };
}

/** Creates a plan of a product, or edits one (licenses sold before keep their values). */
export function PlanFormModal({
  opened,
  onClose,
  plan,
  products,
  productId,
}: {
  opened: boolean;
  onClose: () => void;
  plan?: Plan;
  products: readonly { id: string; name: string }[];
  productId?: string;
}) {
  const form = useZodForm(planFormSchema, valuesOf(plan, productId));
  const { setInitialValues, setValues, resetTouched, clearErrors } = form;
  useEffect(() => {
    if (!opened) return;
    setInitialValues(valuesOf(plan, productId));
    setValues(valuesOf(plan, productId));
    resetTouched();
    clearErrors();
  }, [opened, plan, productId, setInitialValues, setValues, resetTouched, clearErrors]);

  const create = useApiMutation(CreatePlanMutation, { success: (data) => `${data.createPlan.plan.name} was created.` });
  const update = useApiMutation(UpdatePlanMutation, { success: (data) => `${data.updatePlan.plan.name} was saved. Licenses sold before keep their values.` });

  const submit = form.onSubmit(async (values) => {
    const fields = planInput(values);
    const done = plan ? await update.run({ input: { id: plan.id, ...fields } }, { form }) : await create.run({ input: { productId: values.productId, ...fields } }, { form });
    if (done) onClose();
  });

  return (
    <Modal opened={opened} onClose={onClose} title={plan ? `Edit plan ${plan.name}` : 'New plan'} centered size="lg">
      <form onSubmit={submit}>
        <Stack>
          <Select
            label="Product"
            required
            disabled={Boolean(plan)}
            data={products.map((product) => ({ value: product.id, label: product.name }))}
            {...form.getInputProps('productId')}
          />
          <TextInput label="Name" required data-autofocus {...form.getInputProps('name')} description="Unique per product, e.g. Pro yearly." />
          <Group grow align="flex-start">
            <TextInput label="Duration" {...form.getInputProps('duration')} description="ISO 8601 period from the sale: P1Y, P6M, P30D; empty: perpetual." />
            <NumberInput label="Devices (max activations)" required min={1} {...form.getInputProps('maxActivations')} />
          </Group>
          <Group grow align="flex-start">
            <NumberInput label="Floating seats" min={1} {...form.getInputProps('floatingSeats')} description="Empty: no floating pool." />
            <TextInput label="Maintenance period" {...form.getInputProps('maintenancePeriod')} description="E.g. P1Y; empty: none." />
          </Group>
          <Group grow align="flex-start">
            <NumberInput label="Grace period (days)" min={0} {...form.getInputProps('gracePeriodDays')} />
            <NumberInput label="Offline grace (days)" min={0} {...form.getInputProps('offlineGraceDays')} />
          </Group>
          <TagsInput label="Features" {...form.getInputProps('features')} description="Press Enter after each." />
          <Group>
            <Switch label="Trial" {...form.getInputProps('isTrial', { type: 'checkbox' })} />
            <Switch label="Node-locked" {...form.getInputProps('nodeLocked', { type: 'checkbox' })} />
          </Group>
          <ModalFooter onCancel={onClose} confirmLabel={plan ? 'Save plan' : 'Create plan'} loading={create.saving || update.saving} />
        </Stack>
      </form>
    </Modal>
  );
}
