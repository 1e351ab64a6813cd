import { ActionIcon, Anchor, Badge, Button, Code, CopyButton, Group, Modal, Paper, PasswordInput, Select, Stack, Table, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconCheck, IconCopy, IconPlus, IconTrash } from '@tabler/icons-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { ModalFooter } from '../../../ui/ModalFooter';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import {
  CreatePaymentIntegrationMutation,
  DeletePaymentIntegrationMutation,
  MapPaymentPriceMutation,
  PaymentIntegrationDetailQuery,
  PaymentIntegrationsQuery,
  UnmapPaymentPriceMutation,
  UpdatePaymentIntegrationMutation,
  type PaymentIntegration,
  type PlanOption,
} from '../graphql/documents';

const PROVIDERS = [
  { value: 'STRIPE', label: 'Stripe', secret: 'Signing secret (whsec_…) of the webhook endpoint', price: 'Stripe price id (price_…)' },
  { value: 'PADDLE', label: 'Paddle Billing', secret: 'Secret key of the notification destination', price: 'Paddle price id (pri_…)' },
  { value: 'LEMONSQUEEZY', label: 'Lemon Squeezy', secret: 'Signing secret of the webhook', price: 'Lemon Squeezy variant id' },
] as const;
const providerOf = (value: string) => PROVIDERS.find((provider) => provider.value === value) ?? PROVIDERS[0];
const REFUND_ACTIONS = [
  { value: 'SUSPEND', label: 'Suspend the license (reversible)' },
  { value: 'REVOKE', label: 'Revoke the license (final)' },
];
const OUTCOME_COLORS: Record<string, string> = { APPLIED: 'green', IGNORED: 'gray', PENDING: 'yellow', FAILED: 'red' };

/** Settings → Payments: connect Stripe, Paddle Billing or Lemon Squeezy; their purchases become licenses. */
export function PaymentsPage() {
  const [result, reload] = useQuery({ query: PaymentIntegrationsQuery });
  const [connecting, { open, close }] = useDisclosure(false);
  const refresh = () => reload({ requestPolicy: 'network-only' });
  return (
    <>
      <PageHeader
        title="Payments"
        description="Connect your payment provider: a purchase creates a license from the plan its price is mapped to and emails the key; renewals, cancellations and refunds follow."
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={open}>
            Connect a provider
          </Button>
        }
      />
      <ConnectModal opened={connecting} onClose={close} onDone={refresh} />
      <QueryState
        result={result}
        onRetry={refresh}
        isEmpty={(data) => data.paymentIntegrations.nodes.length === 0}
        empty={
          <Paper>
            <EmptyState title="No payment provider connected">Connect Stripe, Paddle Billing or Lemon Squeezy to sell licenses with no glue code.</EmptyState>
          </Paper>
        }
      >
        {(data) => (
          <Stack>
            {data.paymentIntegrations.nodes.map((integration) => (
              <IntegrationCard key={integration.id} integration={integration} plans={data.plans.nodes} onChanged={refresh} />
            ))}
          </Stack>
        )}
      </QueryState>
    </>
  );
}

function ConnectModal({ opened, onClose, onDone }: { opened: boolean; onClose: () => void; onDone: () => void }) {
  const [provider, setProvider] = useState<string>('STRIPE');
  const [secret, setSecret] = useState('');
  const [refundAction, setRefundAction] = useState<string>('SUSPEND');
  const create = useApiMutation(CreatePaymentIntegrationMutation, { success: 'Provider connected: paste its webhook URL into the provider.' });
  const close = () => {
    setSecret('');
    onClose();
  };
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    const data = await create.run({ input: { provider: provider as 'STRIPE', signingSecret: secret, refundAction: refundAction as 'SUSPEND' } });
    if (data) {
      onDone();
      close();
    }
  };
  return (
    <Modal opened={opened} onClose={close} title="Connect a payment provider" centered size="lg">
      <form onSubmit={submit}>
        <Stack>
          <Select label="Provider" data={PROVIDERS.map(({ value, label }) => ({ value, label }))} value={provider} onChange={(value) => setProvider(value ?? 'STRIPE')} allowDeselect={false} />
          <PasswordInput label="Signing secret" description={`${providerOf(provider).secret}. Stored encrypted and never shown again.`} required value={secret} onChange={(event) => setSecret(event.currentTarget.value)} />
          <Select label="On a refund or a lost dispute" data={REFUND_ACTIONS} value={refundAction} onChange={(value) => setRefundAction(value ?? 'SUSPEND')} allowDeselect={false} />
          <ModalFooter onCancel={close} confirmLabel="Connect" loading={create.saving} />
        </Stack>
      </form>
    </Modal>
  );
}

function IntegrationCard({ integration, plans, onChanged }: { integration: PaymentIntegration; plans: readonly PlanOption[]; onChanged: () => void }) {
  const [detail, reload] = useQuery({ query: PaymentIntegrationDetailQuery, variables: { id: integration.id } });
  const refresh = () => reload({ requestPolicy: 'network-only' });
  const [priceId, setPriceId] = useState('');
  const [planId, setPlanId] = useState<string | null>(null);
  const map = useApiMutation(MapPaymentPriceMutation, { success: 'Price mapped.' });
  const unmap = useApiMutation(UnmapPaymentPriceMutation, { success: 'Mapping removed.' });
  const update = useApiMutation(UpdatePaymentIntegrationMutation, { success: 'Saved.' });
  const remove = useApiMutation(DeletePaymentIntegrationMutation, { success: 'Provider disconnected.' });
  const [replacing, setReplacing] = useState(false);
  const [newSecret, setNewSecret] = useState('');
  const replaceSecret = async (event: React.FormEvent) => {
    event.preventDefault();
    if (await update.run({ input: { id: integration.id, signingSecret: newSecret } })) {
      setNewSecret('');
      setReplacing(false);
      onChanged();
    }
  };
  const provider = providerOf(integration.provider);
  const planLabel = (plan: PlanOption) => `${plan.product.name} — ${plan.name}`;
  const addMapping = async (event: React.FormEvent) => {
    event.preventDefault();
    if (!planId) return;
    if (await map.run({ input: { integrationId: integration.id, priceId, planId } })) {
      setPriceId('');
      refresh();
    }
  };
  return (
    <Paper p="md" withBorder>
      <Modal opened={replacing} onClose={() => setReplacing(false)} title={`Replace the signing secret of ${integration.name}`} centered>
        <form onSubmit={replaceSecret}>
          <Stack>
            <PasswordInput label="New signing secret" description={`${provider.secret}. Stored encrypted and never shown again.`} required value={newSecret} onChange={(event) => setNewSecret(event.currentTarget.value)} data-autofocus />
            <ModalFooter onCancel={() => setReplacing(false)} confirmLabel="Replace secret" loading={update.saving} />
          </Stack>
        </form>
      </Modal>
      <Stack>
        <Group justify="space-between">
          <Group gap="xs">
            <Title order={3} size="h4">
              {integration.name}
            </Title>
            <Badge variant="light">{provider.label}</Badge>
            {!integration.enabled && <Badge color="gray">Disabled</Badge>}
          </Group>
          <Group gap="xs">
            <Button variant="default" size="xs" onClick={() => setReplacing(true)}>
              Replace secret
            </Button>
            <Button variant="default" size="xs" loading={update.saving} onClick={async () => (await update.run({ input: { id: integration.id, enabled: !integration.enabled } })) && onChanged()}>
              {integration.enabled ? 'Disable' : 'Enable'}
            </Button>
            <ConfirmAction
              size="xs"
              label="Disconnect"
              title={`Disconnect ${integration.name}?`}
              message={`${provider.label}'s deliveries to this webhook URL are refused from then on, and its price mappings, received events and subscriptions are deleted. Licenses already sold stay as they are; their later renewals, cancellations and refunds are no longer applied. To pause deliveries instead, disable it.`}
              confirmLabel="Disconnect"
              busy={remove.saving}
              onConfirm={async () => {
                const done = await remove.run({ input: { id: integration.id } });
                if (done) onChanged();
                return done;
              }}
            />
          </Group>
        </Group>
        <div>
          <Text size="sm" fw={500}>
            Webhook URL — paste it into {provider.label}
          </Text>
          <Group gap="xs" wrap="nowrap">
            <Code style={{ wordBreak: 'break-all' }} data-testid="payment-webhook-url">
              {integration.webhookUrl}
            </Code>
            <CopyButton value={integration.webhookUrl}>
              {({ copied, copy }) => (
                <Tooltip label={copied ? 'Copied' : 'Copy'}>
                  <ActionIcon variant="subtle" onClick={copy} aria-label="Copy the webhook URL">
                    {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
                  </ActionIcon>
                </Tooltip>
              )}
            </CopyButton>
          </Group>
          <Text size="xs" c="dimmed">
            Signing secret {integration.secretHint} · on a refund: {integration.refundAction === 'REVOKE' ? 'revoke' : 'suspend'}
          </Text>
        </div>
        <QueryState result={detail} onRetry={refresh}>
          {(data) => (
            <>
              <div>
                <Title order={4} size="h5">
                  Prices sold as plans
                </Title>
                <Table>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Price</Table.Th>
                      <Table.Th>Plan</Table.Th>
                      <Table.Th aria-label="Actions" />
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.paymentPrices.nodes.map((mapping) => (
                      <Table.Tr key={mapping.id}>
                        <Table.Td>
                          <Code>{mapping.priceId}</Code>
                        </Table.Td>
                        <Table.Td>{mapping.plan.name}</Table.Td>
                        <Table.Td>
                          <ActionIcon variant="subtle" color="red" aria-label={`Remove the mapping of ${mapping.priceId}`} onClick={async () => (await unmap.run({ input: { id: mapping.id } })) && refresh()}>
                            <IconTrash size={16} />
                          </ActionIcon>
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
                <form onSubmit={addMapping}>
                  <Group align="end" mt="xs">
                    <TextInput label={provider.price} required value={priceId} onChange={(event) => setPriceId(event.currentTarget.value)} />
                    <Select label="Plan" required data={plans.map((plan) => ({ value: plan.id, label: planLabel(plan) }))} value={planId} onChange={setPlanId} searchable />
                    <Button type="submit" variant="default" loading={map.saving}>
                      Map price
                    </Button>
                  </Group>
                </form>
              </div>
              <div>
                <Title order={4} size="h5">
                  Received events ({data.paymentEvents.totalCount})
                </Title>
                {data.paymentEvents.nodes.length === 0 ? (
                  <Text size="sm" c="dimmed">
                    Nothing received yet: send a test event from {provider.label}.
                  </Text>
                ) : (
                  <Table.ScrollContainer minWidth={600}>
                    <Table>
                      <Table.Thead>
                        <Table.Tr>
                          <Table.Th>Received</Table.Th>
                          <Table.Th>Event</Table.Th>
                          <Table.Th>Outcome</Table.Th>
                          <Table.Th>Detail</Table.Th>
                        </Table.Tr>
                      </Table.Thead>
                      <Table.Tbody>
                        {data.paymentEvents.nodes.map((event) => (
                          <Table.Tr key={event.id}>
                            <Table.Td>{new Date(event.receivedAt as string).toLocaleString()}</Table.Td>
                            <Table.Td>
                              <Text size="sm">{event.type}</Text>
                              <Text size="xs" c="dimmed">
                                {event.providerEventId}
                              </Text>
                            </Table.Td>
                            <Table.Td>
                              <Badge color={OUTCOME_COLORS[event.outcome] ?? 'gray'} variant="light">
                                {event.outcome.toLowerCase()}
                              </Badge>
                            </Table.Td>
                            <Table.Td>
                              <Text size="sm">{event.detail}</Text>
                              {event.licenseId && (
                                <Anchor component={Link} to={`/licenses/${event.licenseId}`} size="xs">
                                  Open the license
                                </Anchor>
                              )}
                            </Table.Td>
                          </Table.Tr>
                        ))}
                      </Table.Tbody>
                    </Table>
                  </Table.ScrollContainer>
                )}
              </div>
            </>
          )}
        </QueryState>
      </Stack>
    </Paper>
  );
}
