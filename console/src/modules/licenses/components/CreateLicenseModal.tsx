import { Button, Modal, Select, Stack, Text, TextInput } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
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
  // Sold from a plan: the server copies the plan's values (its dates from now); the form asks only for the customer.
  const [planId, setPlanId] = useState<string | null>(null);
  const [planEmail, setPlanEmail] = useState('');
  // A product that accepts imported keys: the key the customer already has (empty: a new one is generated).
  const [importedKey, setImportedKey] = useState('');
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
    setPlanId(null);
    setPlanEmail('');
    setImportedKey('');
    setCreated(null);
    onClose();
  };

  const finish = (result: Awaited<ReturnType<typeof create.run>>) => {
    if (!result) return;
    onCreated?.();
    const license = readFragment(LicenseListFields, result.createLicense.license);
    setCreated({ key: result.createLicense.key, id: license.id, product: license.product.name });
  };
  const products = data?.products.nodes ?? [];
  const takesImportedKeys = products.some((product) => product.id === form.getValues().productId && product.allowImportedKeys);
  const key = takesImportedKeys && importedKey.trim() ? { key: importedKey } : {};
  const submit = form.onSubmit(async (values) => finish(await create.run({ input: { productId: values.productId, ...toLicenseAttributes(values), ...key } }, { form, rename: SERVER_FIELD })));
  const submitPlan = async (event: FormEvent) => {
    event.preventDefault();
    finish(await create.run({ input: { planId, customerEmail: planEmail.trim() || null } }));
  };
  const plans = data?.plans.nodes ?? [];
  const plan = plans.find((candidate) => candidate.id === planId);

  return (
    <>
      <Modal opened={opened && created === null} onClose={close} title="New license" size="lg" centered returnFocus={created === null}>
        <form onSubmit={plan ? submitPlan : submit} noValidate>
          <Stack>
            <Select
              label="From a plan"
              placeholder={plans.length ? 'None: set every value below' : 'No plans yet (Products page)'}
              clearable
              disabled={plans.length === 0}
              data={plans.map((candidate) => ({ value: candidate.id, label: `${candidate.product.name}: ${candidate.name}` }))}
              value={planId}
              onChange={setPlanId}
              description="The plan's values are copied onto the license; later edits of the plan do not change it."
            />
            {plan ? (
              <>
                <Text size="sm">
                  A license of <b>{plan.product.name}</b> with {plan.maxActivations} device{plan.maxActivations === 1 ? '' : 's'}, {plan.duration ? `expiring ${plan.duration} from now` : 'perpetual'}.
                </Text>
                <TextInput label="Customer email" type="email" value={planEmail} onChange={(event) => setPlanEmail(event.currentTarget.value)} />
              </>
            ) : (
              <>
                <LicenseFormFields form={form} products={products.map((product) => ({ value: product.id, label: product.isBundle ? `${product.name} (bundle)` : product.name }))} />
                {takesImportedKeys && (
                  <TextInput
                    label="Existing key"
                    placeholder="Empty: a new key is generated"
                    autoComplete="off"
                    spellCheck={false}
                    value={importedKey}
                    onChange={(event) => setImportedKey(event.currentTarget.value)}
                    description="The key the customer already has from another licensing service, kept exactly (case-sensitive)."
                  />
                )}
              </>
            )}
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
          <Button variant="default" onClick={() => { setCreated(null); setImportedKey(''); startOver(form.getValues().productId); }}>
            Create another
          </Button>
        }
      />
    </>
  );
}
