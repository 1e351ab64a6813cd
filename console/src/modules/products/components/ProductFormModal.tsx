import { Button, Group, Modal, MultiSelect, Stack, Switch, TextInput } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import type { FragmentOf } from '../../../graphql';
import { useApiMutation } from '../../../ui/useApiMutation';
import { CreateProductMutation, UpdateProductMutation, type ProductFields } from '../graphql/documents';

type Product = FragmentOf<typeof ProductFields>;

/** Creates a product or bundle, or edits one (rename, change bundle members). */
export function ProductFormModal({ opened, onClose, product, products }: { opened: boolean; onClose: () => void; product?: Product; products: Product[] }) {
  const [name, setName] = useState('');
  const [isBundle, setIsBundle] = useState(false);
  const [members, setMembers] = useState<string[]>([]);
  useEffect(() => {
    if (!opened) return;
    setName(product?.name ?? '');
    setIsBundle(product?.isBundle ?? false);
    setMembers(product?.bundleMembers.map((member) => member.id) ?? []);
  }, [opened, product]);

  const create = useApiMutation(CreateProductMutation, { success: (data) => `${data.createProduct.name} was created.` });
  const update = useApiMutation(UpdateProductMutation, { success: (data) => `${data.updateProduct.name} was saved.` });
  const saving = create.saving || update.saving;
  const memberOptions = products.filter((candidate) => !candidate.isBundle && candidate.id !== product?.id).map((candidate) => ({ value: candidate.id, label: candidate.name }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const bundleMemberIds = isBundle ? members : [];
    const done = product ? await update.run({ id: product.id, name: name.trim(), bundleMemberIds }) : await create.run({ name: name.trim(), bundleMemberIds: isBundle ? members : null });
    if (done) onClose();
  };

  return (
    <Modal opened={opened} onClose={onClose} title={product ? `Edit ${product.name}` : 'New product'} centered>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Name" required data-autofocus value={name} onChange={(e) => setName(e.currentTarget.value)} error={(create.fieldErrors.name ?? update.fieldErrors.name) || undefined} description="Returned to applications as productName." />
          <Switch label="Bundle of other products" description="A license for a bundle unlocks each member product." checked={isBundle} onChange={(e) => setIsBundle(e.currentTarget.checked)} />
          {isBundle && (
            <MultiSelect
              label="Member products"
              placeholder={memberOptions.length ? 'Pick products' : 'Create the member products first'}
              data={memberOptions}
              value={members}
              onChange={setMembers}
              searchable
              required
              error={create.fieldErrors.bundleMemberIds ?? update.fieldErrors.bundleMemberIds}
            />
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={saving} disabled={!name.trim() || (isBundle && members.length === 0)}>
              {product ? 'Save' : 'Create product'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
