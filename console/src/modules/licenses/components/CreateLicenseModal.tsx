import { Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { useQuery } from 'urql';
import { licensePath } from '../paths';
import { SecretOnce } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { CreateLicenseMutation, ProductOptionsQuery } from '../graphql/documents';
import { EMPTY_LICENSE_FORM, formProblems, toLicenseAttributes, validateLicenseForm, type LicenseForm } from '../licenseForm';
import { LicenseFormFields } from './LicenseFormFields';

/** Issues a license; its key is shown once, with a copy button. */
export function CreateLicenseModal({ opened, onClose, productId }: { opened: boolean; onClose: () => void; productId?: string }) {
  const [form, setForm] = useState<LicenseForm>({ ...EMPTY_LICENSE_FORM, productId: productId ?? '' });
  const [submitted, setSubmitted] = useState(false);
  const [created, setCreated] = useState<{ key: string; id: string; product: string } | null>(null);
  const [{ data }] = useQuery({ query: ProductOptionsQuery, pause: !opened });
  const create = useApiMutation(CreateLicenseMutation, { success: 'License created.' });
  const navigate = useNavigate();
  // Opened from a product-filtered list: preselect that product.
  useEffect(() => {
    if (opened && productId) setForm((current) => (current.productId ? current : { ...current, productId }));
  }, [opened, productId]);
  const problems = formProblems(validateLicenseForm(form), create.fieldErrors, submitted);

  const close = () => {
    setForm({ ...EMPTY_LICENSE_FORM, productId: productId ?? '' });
    setSubmitted(false);
    setCreated(null);
    onClose();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSubmitted(true);
    if (Object.keys(validateLicenseForm(form)).length) return;
    const result = await create.run({ input: { productId: form.productId, ...toLicenseAttributes(form) } });
    if (result) setCreated({ key: result.createLicense.key, id: result.createLicense.license.id, product: result.createLicense.license.product.name });
  };

  return (
    <Modal opened={opened} onClose={close} title={created ? 'License created' : 'New license'} size="lg" centered closeOnClickOutside={!created}>
      {created ? (
        <Stack>
          <Text size="sm">
            A license for <b>{created.product}</b>. Send the key to your customer.
          </Text>
          <SecretOnce label="license key" value={created.key} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => { setCreated(null); setSubmitted(false); setForm({ ...EMPTY_LICENSE_FORM, productId: form.productId }); }}>
              Create another
            </Button>
            <Button onClick={() => { close(); navigate(licensePath(created.id)); }}>Open license</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit} noValidate>
          <Stack>
            <LicenseFormFields form={form} onChange={setForm} problems={problems} products={(data?.products ?? []).map((product) => ({ value: product.id, label: product.isBundle ? `${product.name} (bundle)` : product.name }))} />
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit" loading={create.saving}>
                Create license
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
