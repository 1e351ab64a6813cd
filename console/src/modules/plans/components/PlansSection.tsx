import { Anchor, Badge, Button, Group, Paper, Switch, Text, Title } from '@mantine/core';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { DataTable } from '../../../ui/DataTable';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { DeletePlanMutation, PlansQuery, UpdatePlanMutation, type Plan } from '../graphql/documents';
import { PlanFormModal } from './PlanFormModal';

/** "P1Y" → "1 year", a perpetual plan "Perpetual". */
export function describePeriod(period: string | null): string {
  if (!period) return 'Perpetual';
  const units: [RegExp, string][] = [[/(\d+)Y/, 'year'], [/(\d+)M/, 'month'], [/(\d+)W/, 'week'], [/(\d+)D/, 'day']];
  return units
    .map(([pattern, unit]) => pattern.exec(period)?.[1])
    .map((count, index) => (count ? `${count} ${units[index][1]}${count === '1' ? '' : 's'}` : null))
    .filter(Boolean)
    .join(' ');
}

/** The products page's plans: what a sold license of each product gets; create, edit, archive and delete them. */
export function PlansSection({ products, canManage }: { products: readonly { id: string; name: string }[]; canManage: boolean }) {
  const [includeArchived, setIncludeArchived] = useState(false);
  const [result, reload] = useQuery({ query: PlansQuery, variables: { filter: { includeArchived } } });
  const [editing, setEditing] = useState<Plan | 'new' | null>(null);

  return (
    <Paper p="md" mt="lg">
      <Group justify="space-between" mb="sm">
        <div>
          <Title order={3}>Plans</Title>
          <Text size="sm" c="dimmed">
            What a sold license gets: a license created from a plan copies its values; editing a plan never changes licenses already sold.
          </Text>
        </div>
        <Group>
          <Switch label="Show archived" checked={includeArchived} onChange={(event) => setIncludeArchived(event.currentTarget.checked)} />
          <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing('new')} disabled={!canManage || products.length === 0}>
            New plan
          </Button>
        </Group>
      </Group>
      <PlanFormModal opened={editing !== null} onClose={() => setEditing(null)} plan={editing && editing !== 'new' ? editing : undefined} products={products} />
      <QueryState
        result={result}
        onRetry={() => reload({ requestPolicy: 'network-only' })}
        isEmpty={(data) => data.plans.nodes.length === 0}
        empty={<EmptyState title="No plans yet">Create a plan per offer (e.g. Pro yearly: 3 devices, 1 year), then create licenses from it.</EmptyState>}
      >
        {(data) => (
          <DataTable
            records={data.plans.nodes}
            minWidth={760}
            rowTestId="plan-row"
            columns={[
              {
                accessor: 'name',
                title: 'Plan',
                render: (plan) => (
                  <Group gap="xs">
                    <Text size="sm" fw={500}>
                      {plan.name}
                    </Text>
                    {plan.archived && (
                      <Badge variant="light" color="gray">
                        Archived
                      </Badge>
                    )}
                  </Group>
                ),
              },
              { accessor: 'product', title: 'Product', render: (plan) => plan.product.name },
              { accessor: 'duration', title: 'Duration', render: (plan) => describePeriod(plan.duration) },
              { accessor: 'maxActivations', title: 'Devices', textAlign: 'right' },
              {
                accessor: 'licenseCount',
                title: 'Licenses',
                textAlign: 'right',
                render: (plan) => (
                  <Anchor component={Link} to={`/licenses?plan=${plan.id}`} size="sm">
                    {plan.licenseCount}
                  </Anchor>
                ),
              },
              { accessor: 'actions', title: '', render: (plan) => canManage && <PlanActions plan={plan} onEdit={() => setEditing(plan)} /> },
            ]}
          />
        )}
      </QueryState>
    </Paper>
  );
}

function PlanActions({ plan, onEdit }: { plan: Plan; onEdit: () => void }) {
  const archive = useApiMutation(UpdatePlanMutation, { success: (data) => `${data.updatePlan.plan.name} was ${data.updatePlan.plan.archived ? 'archived' : 'restored'}.` });
  const remove = useApiMutation(DeletePlanMutation, { success: `${plan.name} was deleted.` });
  return (
    <Group gap="xs" justify="flex-end" wrap="nowrap">
      <Button size="xs" variant="default" onClick={onEdit}>
        Edit
      </Button>
      <Button size="xs" variant="default" loading={archive.saving} onClick={() => archive.run({ input: { id: plan.id, archived: !plan.archived } })}>
        {plan.archived ? 'Restore' : 'Archive'}
      </Button>
      <ConfirmAction
        size="xs"
        label="Delete"
        message="This cannot be undone. Only a plan no license was created from can be deleted; archive the others."
        confirmLabel="Delete plan"
        busy={remove.saving}
        disabledReason={plan.licenseCount > 0 ? `${plan.licenseCount === 1 ? '1 license was' : `${plan.licenseCount} licenses were`} created from this plan: archive it instead.` : null}
        title={`Delete plan ${plan.name}?`}
        onConfirm={() => remove.run({ id: plan.id })}
      />
    </Group>
  );
}
