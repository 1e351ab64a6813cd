import { Group, Modal, MultiSelect, NumberInput, Stack, Switch, TextInput } from '@mantine/core';
import { useEffect } from 'react';
import { z } from 'zod';
import { readFragment } from '../../../graphql';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { CreateProductMutation, UpdateProductMutation } from '../graphql/documents';
import { ProductFields, type Product } from './ProductsTable';
import { ModalFooter } from '../../../ui/ModalFooter';

const schema = z
  .object({
    name: z.string().trim().min(1, 'Name the product.'),
    isBundle: z.boolean(),
    bundleMemberIds: z.array(z.string()),
    renewalUrl: z.string(),
    /** Empty: customers cannot free devices in the portal. */
    deviceFreeLimit: z.union([z.number().int().min(0).max(1000), z.literal('')]),
    deviceFreeWindowDays: z.number().int().min(1).max(365),
    allowImportedKeys: z.boolean(),
  })
  .refine((form) => !form.isBundle || form.bundleMemberIds.length > 0, { path: ['bundleMemberIds'], message: 'Pick at least one member product.', when: () => true });

const valuesOf = (product?: Product) => ({
  name: product?.name ?? '',
  isBundle: product?.isBundle ?? false,
  bundleMemberIds: product?.bundleMembers.map((member) => member.id) ?? [],
  renewalUrl: product?.renewalUrl ?? '',
  deviceFreeLimit: (product?.deviceFreeLimit ?? '') as number | '',
  deviceFreeWindowDays: product?.deviceFreeWindowDays ?? 30,
  allowImportedKeys: product?.allowImportedKeys ?? false,
});

/** Creates a product or bundle, or edits one (rename, change bundle members). */
export function ProductFormModal({ opened, onClose, product, products }: { opened: boolean; onClose: () => void; product?: Product; products: readonly Product[] }) {
  const form = useZodForm(schema, valuesOf(product));
  const { setInitialValues, setValues, resetTouched, clearErrors } = form;
  useEffect(() => {
    if (!opened) return;
    setInitialValues(valuesOf(product));
    setValues(valuesOf(product));
    resetTouched();
    clearErrors();
  }, [opened, product, setInitialValues, setValues, resetTouched, clearErrors]);

  const create = useApiMutation(CreateProductMutation, { success: (data) => `${readFragment(ProductFields, data.createProduct.product).name} was created.` });
  const update = useApiMutation(UpdateProductMutation, { success: (data) => `${readFragment(ProductFields, data.updateProduct.product).name} was saved.` });
  const saving = create.saving || update.saving;
  const memberOptions = products.filter((candidate) => !candidate.isBundle && candidate.id !== product?.id).map((candidate) => ({ value: candidate.id, label: candidate.name }));
  const values = form.getValues();

  const submit = form.onSubmit(async ({ name, isBundle, bundleMemberIds, renewalUrl, deviceFreeLimit, deviceFreeWindowDays, allowImportedKeys }) => {
    const portal = { renewalUrl: renewalUrl.trim(), deviceFreeLimit: deviceFreeLimit === '' ? null : deviceFreeLimit, deviceFreeWindowDays, allowImportedKeys };
    const done = product
      ? await update.run({ id: product.id, name: name.trim(), bundleMemberIds: isBundle ? bundleMemberIds : [], ...portal }, { form })
      : await create.run({ name: name.trim(), bundleMemberIds: isBundle ? bundleMemberIds : null, ...portal }, { form });
    if (done) onClose();
  });

  return (
    <Modal opened={opened} onClose={onClose} title={product ? `Edit ${product.name}` : 'New product'} centered>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Name" required data-autofocus {...form.getInputProps('name')} description="Returned to applications as productName." />
          <Switch label="Bundle of other products" description="A license for a bundle unlocks each member product." {...form.getInputProps('isBundle', { type: 'checkbox' })} />
          {values.isBundle && (
            <MultiSelect
              label="Member products"
              placeholder={memberOptions.length ? 'Pick products' : 'Create the member products first'}
              data={memberOptions}
              searchable
              required
              {...form.getInputProps('bundleMemberIds')}
            />
          )}
          <TextInput
            label="Renewal page"
            type="url"
            placeholder="https://acme.example/renew/studio"
            {...form.getInputProps('renewalUrl')}
            description="The customer portal's Renew button for this product. Empty: the company's renewal page."
          />
          <Group grow align="flex-start">
            <NumberInput
              label="Devices a customer may free"
              placeholder="None"
              min={0}
              max={1000}
              allowDecimal={false}
              {...form.getInputProps('deviceFreeLimit')}
              description="In the customer portal. Empty: none."
            />
            <NumberInput label="Per (days)" min={1} max={365} allowDecimal={false} {...form.getInputProps('deviceFreeWindowDays')} description="The window the limit counts over." />
          </Group>
          <Switch
            label="Accept imported keys"
            description="Licenses may be created with the keys customers already have from another licensing service (8–256 printable ASCII characters, kept exactly). Turning it off keeps existing keys working."
            {...form.getInputProps('allowImportedKeys', { type: 'checkbox' })}
          />
          <ModalFooter onCancel={onClose} confirmLabel={product ? 'Save' : 'Create product'} loading={saving} disabled={!values.name.trim() || (values.isBundle && values.bundleMemberIds.length === 0)} />
        </Stack>
      </form>
    </Modal>
  );
}
