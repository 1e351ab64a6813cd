import { Button, Modal, Stack, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { SecretOnceModal } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { CreateLicenseMutation, ProductOptionsQuery } from '../graphql/documents';
import { EMPTY_LICENSE_FORM, licenseFormSchema, SERVER_FIELD, toLicenseAttributes, type LicenseForm } from '../licenseForm';
import { licensePath } from '../paths';
import { LicenseFormFields } from './LicenseFormFields';
import { LicenseListFields } from './LicensesTable';
import { ModalFooter } from '../../../ui/ModalFooter';

const schema = licenseFormSchema();

/** Issues a license; its key is shown once, with a copy button. */
/** onCreated: the list starts over at its first page (the new license made every loaded page stale). */
export function CreateLicenseModal({ opened, onClose, onCreated, productId }: { opened: boolean; onClose: () => void; onCreated?: () => void; productId?: string }) {
  const form = useZodForm<LicenseForm>(schema, { ...EMPTY_LICENSE_FORM, productId: productId ?? '' });
  const [created, setCreated] = useState<{ key: string; id: string; product: string } | null>(null);
  const [{ data }] = useQuery({ query: ProductOptionsQuery, pause: !opened });
  const create = useApiMutation(CreateLicenseMutation, { success: 'License created.' });
  const navigate = useNavigate();
  // Opened from a product-filtered list: preselect that product.
  const { setFieldValue, getValues } = form;
  useEffect(() => {
    if (opened && productId && !getValues().productId) setFieldValue('productId', productId);
  }, [opened, productId, getValues, setFieldValue]);

  const startOver = (keepProduct: string) => {
    form.setValues({ ...EMPTY_LICENSE_FORM, productId: keepProduct });
    form.resetTouched();
    form.clearErrors();
  };
  const close = () => {
    startOver(productId ?? '');
    setCreated(null);
    onClose();
  };

  const submit = form.onSubmit(async (values) => {
    const result = await create.run({ input: { productId: values.productId, ...toLicenseAttributes(values) } }, { form, rename: SERVER_FIELD });
    if (!result) return;
    onCreated?.();
    const license = readFragment(LicenseListFields, result.createLicense.license);
    setCreated({ key: result.createLicense.key, id: license.id, product: license.product.name });
  });

  return (
    <>
      <Modal opened={opened && created === null} onClose={close} title="New license" size="lg" centered returnFocus={created === null}>
        <form onSubmit={submit} noValidate>
          <Stack>
            <LicenseFormFields form={form} products={(data?.products.nodes ?? []).map((product) => ({ value: product.id, label: product.isBundle ? `${product.name} (bundle)` : product.name }))} />
            <ModalFooter onCancel={close} confirmLabel="Create license" loading={create.saving} />
          </Stack>
        </form>
      </Modal>
      <SecretOnceModal
        secret={created?.key ?? null}
        title="License created"
        label="license key"
        onClose={close}
        before={
          <Text size="sm">
            A license for <b>{created?.product}</b>. Send the key to your customer.
          </Text>
        }
        done={{ label: 'Open license', onClick: () => { close(); if (created) navigate(licensePath(created.id)); } }}
        actions={
          <Button variant="default" onClick={() => { setCreated(null); startOver(form.getValues().productId); }}>
            Create another
          </Button>
        }
      />
    </>
  );
}
