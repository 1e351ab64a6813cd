import { Alert, Button, Group, Paper, Stack, Text, TextInput } from '@mantine/core';
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

type Company = { name: string; keyPrefix: string; subscriptionEndsAt: string | null; renewalUrl: string | null; supportEmail: string | null };

const schema = z.object({ name: z.string().trim().min(1, 'Name your company.'), keyPrefix: keyPrefixSchema, renewalUrl: z.string(), supportEmail: z.string() });
const valuesOf = (company: Company) => ({ name: company.name, keyPrefix: company.keyPrefix, renewalUrl: company.renewalUrl ?? '', supportEmail: company.supportEmail ?? '' });

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

  const submit = form.onSubmit(async ({ name, keyPrefix, renewalUrl, supportEmail }) => {
    await save.run({ name: name.trim(), keyPrefix, renewalUrl: renewalUrl.trim(), supportEmail: supportEmail.trim() }, { form });
  });

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
