import { Alert, Button, Group, Paper, Stack, Text, TextInput } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { useQuery } from 'urql';
import { formatDate } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { validateKeyPrefix } from '../../auth/validation';
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

function CompanyForm({ company }: { company: { name: string; keyPrefix: string; subscriptionEndsAt: string | null; renewalUrl: string | null; supportEmail: string | null } }) {
  const [name, setName] = useState(company.name);
  const [keyPrefix, setKeyPrefix] = useState(company.keyPrefix);
  const [renewalUrl, setRenewalUrl] = useState(company.renewalUrl ?? '');
  const [supportEmail, setSupportEmail] = useState(company.supportEmail ?? '');
  useEffect(() => {
    setName(company.name);
    setKeyPrefix(company.keyPrefix);
    setRenewalUrl(company.renewalUrl ?? '');
    setSupportEmail(company.supportEmail ?? '');
  }, [company.name, company.keyPrefix, company.renewalUrl, company.supportEmail]);
  const canManage = useCanManage();
  const save = useApiMutation(UpdateCompanySettingsMutation, { success: 'Company settings saved.' });
  const prefixProblem = validateKeyPrefix(keyPrefix);
  const dirty = name !== company.name || keyPrefix !== company.keyPrefix || renewalUrl !== (company.renewalUrl ?? '') || supportEmail !== (company.supportEmail ?? '');

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (prefixProblem) return;
    await save.run({ name: name.trim(), keyPrefix, renewalUrl: renewalUrl.trim(), supportEmail: supportEmail.trim() });
  };

  return (
    <Paper p="lg" maw={640}>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Company name" required value={name} onChange={(e) => setName(e.currentTarget.value)} disabled={!canManage} error={save.fieldErrors.name} />
          <TextInput
            label="License key prefix"
            required
            maxLength={12}
            value={keyPrefix}
            onChange={(e) => setKeyPrefix(e.currentTarget.value.toUpperCase())}
            disabled={!canManage}
            error={prefixProblem ?? save.fieldErrors.keyPrefix}
            description={`New keys look like ${keyPrefix || 'ACME'}-XXXX-XXXX-XXXX-XXXX. Existing keys keep working.`}
          />
          <TextInput
            label="Renewal page"
            type="url"
            placeholder="https://acme.example/renew"
            value={renewalUrl}
            onChange={(e) => setRenewalUrl(e.currentTarget.value)}
            disabled={!canManage}
            error={save.fieldErrors.renewalUrl}
            description="Customers' expiry emails get a “Renew your license” button to it. Empty: no button."
          />
          <TextInput
            label="Support email"
            type="email"
            placeholder="support@acme.example"
            value={supportEmail}
            onChange={(e) => setSupportEmail(e.currentTarget.value)}
            disabled={!canManage}
            error={save.fieldErrors.supportEmail}
            description="Named in customers' expiry emails for questions. Empty: not named."
          />
          {company.subscriptionEndsAt && (
            <Alert variant="light" color="blue">
              <Text size="sm">Your Keyforge subscription runs until {formatDate(company.subscriptionEndsAt)}.</Text>
            </Alert>
          )}
          <Group justify="flex-end">
            <Button type="submit" loading={save.saving} disabled={!canManage || !dirty || Boolean(prefixProblem)}>
              Save changes
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
