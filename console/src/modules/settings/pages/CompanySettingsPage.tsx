import { Alert, Button, ColorInput, Group, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect } from 'react';
import { useQuery } from 'urql';
import { z } from 'zod';
import { formatDate } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { keyPrefixSchema, validateKeyPrefix } from '../../auth/validation';
import { CompanyQuery, UpdateCompanySettingsMutation } from '../graphql/documents';

export function CompanySettingsPage() {
  const [result, reload] = useQuery({ query: CompanyQuery });
  return (
    <>
      <PageHeader title="Company" description="Your company's name brands the emails your customers receive; the prefix starts every new license key." />
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {(data) => <CompanyForm company={data.company} />}
      </QueryState>
    </>
  );
}

type Company = {
  name: string;
  keyPrefix: string;
  subscriptionEndsAt: string | null;
  renewalUrl: string | null;
  supportEmail: string | null;
  portalHandle: string | null;
  portalLogoUrl: string | null;
  portalAccentColor: string | null;
};

const schema = z.object({
  name: z.string().trim().min(1, 'Name your company.'),
  keyPrefix: keyPrefixSchema,
  renewalUrl: z.string(),
  supportEmail: z.string(),
  portalHandle: z
    .string()
    .trim()
    .regex(/^$|^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/, 'Use 1–40 lower-case letters, digits or hyphens.'),
  portalLogoUrl: z.string(),
  portalAccentColor: z.string(),
});
const valuesOf = (company: Company) => ({
  name: company.name,
  keyPrefix: company.keyPrefix,
  renewalUrl: company.renewalUrl ?? '',
  supportEmail: company.supportEmail ?? '',
  portalHandle: company.portalHandle ?? '',
  portalLogoUrl: company.portalLogoUrl ?? '',
  portalAccentColor: company.portalAccentColor ?? '',
});

function CompanyForm({ company }: { company: Company }) {
  const form = useZodForm(schema, valuesOf(company));
  const { setInitialValues, setValues } = form;
  // Saved (or changed elsewhere): the stored settings are the new starting point.
  const stored = JSON.stringify(valuesOf(company));
  useEffect(() => {
    const values = JSON.parse(stored) as ReturnType<typeof valuesOf>;
    setInitialValues(values);
    setValues(values);
  }, [stored, setInitialValues, setValues]);
  const canManage = useCanManage();
  const save = useApiMutation(UpdateCompanySettingsMutation, { success: 'Company settings saved.' });
  const values = form.getValues();
  const prefixProblem = validateKeyPrefix(values.keyPrefix);

  const submit = form.onSubmit(async ({ name, keyPrefix, renewalUrl, supportEmail, portalHandle, portalLogoUrl, portalAccentColor }) => {
    await save.run(
      {
        name: name.trim(),
        keyPrefix,
        renewalUrl: renewalUrl.trim(),
        supportEmail: supportEmail.trim(),
        portalHandle: portalHandle.trim(),
        portalLogoUrl: portalLogoUrl.trim(),
        portalAccentColor: portalAccentColor.trim(),
      },
      { form },
    );
  });
  const portalUrl = values.portalHandle ? `${window.location.origin}/portal/${values.portalHandle}` : null;

  return (
    <Paper p="lg" maw={640}>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Company name" required {...form.getInputProps('name')} disabled={!canManage} />
          <TextInput
            label="License key prefix"
            required
            maxLength={12}
            {...form.getInputProps('keyPrefix')}
            onChange={(e) => form.setFieldValue('keyPrefix', e.currentTarget.value.toUpperCase())}
            disabled={!canManage}
            error={prefixProblem ?? form.errors.keyPrefix}
            description={`New keys look like ${values.keyPrefix || 'ACME'}-XXXX-XXXX-XXXX-XXXX. Existing keys keep working.`}
          />
          <TextInput
            label="Renewal page"
            type="url"
            placeholder="https://acme.example/renew"
            {...form.getInputProps('renewalUrl')}
            disabled={!canManage}
            description="Customers' expiry emails get a “Renew your license” button to it. Empty: no button."
          />
          <TextInput
            label="Support email"
            type="email"
            placeholder="support@acme.example"
            {...form.getInputProps('supportEmail')}
            disabled={!canManage}
            description="Named in customers' expiry emails for questions. Empty: not named."
          />
          <Title order={2} size="h4" mt="md">
            Customer portal
          </Title>
          <Text size="sm" c="dimmed">
            Your customers sign in with a link emailed to the address on their licenses, see their licenses and devices, and free a device within each
            product's limit (set on the product).
          </Text>
          <TextInput
            label="Portal address"
            placeholder="acme"
            leftSection={<Text size="xs">/portal/</Text>}
            leftSectionWidth={64}
            {...form.getInputProps('portalHandle')}
            onChange={(e) => form.setFieldValue('portalHandle', e.currentTarget.value.toLowerCase())}
            disabled={!canManage}
            description={portalUrl ? `Customers sign in at ${portalUrl}` : 'A short handle turns the portal on. Empty: no portal.'}
          />
          <TextInput label="Portal logo" type="url" placeholder="https://acme.example/logo.svg" {...form.getInputProps('portalLogoUrl')} disabled={!canManage} description="An https:// image shown in the portal's header." />
          <ColorInput
            label="Portal accent colour"
            placeholder="#1c7ed6"
            format="hex"
            {...form.getInputProps('portalAccentColor')}
            disabled={!canManage}
            description="Buttons and links in the portal. Empty: the default blue."
          />
          {company.subscriptionEndsAt && (
            <Alert variant="light" color="blue">
              <Text size="sm">Your Keyforge subscription runs until {formatDate(company.subscriptionEndsAt)}.</Text>
            </Alert>
          )}
          <Group justify="flex-end">
            <Button type="submit" loading={save.saving} disabled={!canManage || !form.isDirty() || Boolean(prefixProblem)}>
              Save changes
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
