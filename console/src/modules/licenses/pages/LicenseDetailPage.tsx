import { Anchor, Breadcrumbs, Button, Group, Stack, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconHistory, IconPencil } from '@tabler/icons-react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { errorCode } from '../../../lib/errors';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { FloatingSessionsCard } from '../../floating/components/FloatingSessionsCard';
import { UsageCard } from '../../usage/components/UsageCard';
import { ActivationsTable } from '../components/ActivationsTable';
import { EditLicenseModal } from '../components/EditLicenseModal';
import { LicenseDetailFields, LicenseOverview } from '../components/LicenseOverview';
import { LicenseStatusBadge } from '../components/LicenseStatus';
import { LifecycleActions } from '../components/LifecycleActions';
import { OfflineCard } from '../components/OfflineCard';
import { ReissueKeyAction } from '../components/ReissueKeyAction';
import { IntegratePanel } from '../integration/IntegratePanel';
import { LicenseQuery, RevokeLicenseMutation } from '../graphql/documents';

export function LicenseDetailPage() {
  const id = useParams().id ?? '';
  const [result, reload] = useQuery({ query: LicenseQuery, variables: { id } });
  const [editing, { open, close }] = useDisclosure(false);
  const canManage = useCanManage();
  const revoke = useApiMutation(RevokeLicenseMutation, { success: 'License revoked. It no longer validates.' });
  const crumbs = (
    <Breadcrumbs mb="xs">
      <Anchor component={Link} to="/licenses" size="sm">
        Licenses
      </Anchor>
      <Text size="sm" ff="monospace">
        {result.data?.license ? readFragment(LicenseDetailFields, result.data.license).keyHint : '…'}
      </Text>
    </Breadcrumbs>
  );

  if (result.data?.license === null || errorCode(result.error) === 'NotFound' || errorCode(result.error) === 'InvalidRequest') {
    return (
      <>
        {crumbs}
        <EmptyState title="License not found" action={<Button component={Link} to="/licenses" variant="light">All licenses</Button>}>
          It does not exist, or belongs to another company.
        </EmptyState>
      </>
    );
  }

  return (
    <>
      {crumbs}
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {({ license: ref }) => {
          if (!ref) return null;
          const license = readFragment(LicenseDetailFields, ref);
          return (
          <>
            <PageHeader
              title={
                <Group gap="sm">
                  <span style={{ fontFamily: 'var(--mantine-font-family-monospace)' }}>{license.keyHint}</span>
                  <LicenseStatusBadge status={license.status} isTrial={license.isTrial} />
                </Group>
              }
              description={`${license.product.name} · the full key was shown once, when it was issued (created or reissued).`}
              actions={
                <>
                  <Button variant="default" leftSection={<IconHistory size={16} />} component={Link} to={`/activity?entityId=${license.id}`}>
                    History
                  </Button>
                  {canManage && license.status !== 'REVOKED' && (
                    <>
                      <Button variant="default" leftSection={<IconPencil size={16} />} onClick={open}>
                        Edit
                      </Button>
                      <LifecycleActions license={license} />
                      <ReissueKeyAction license={license} />
                      <ConfirmAction
                        label="Revoke"
                        title="Revoke this license?"
                        message={`${license.keyHint} (${license.product.name}) will never validate again, on every device. This cannot be undone.`}
                        confirmLabel="Revoke license"
                        busy={revoke.saving}
                        onConfirm={() => revoke.run({ id: license.id })}
                      />
                    </>
                  )}
                </>
              }
            />
            <EditLicenseModal license={license} opened={editing} onClose={close} />
            <Stack gap="lg">
              <LicenseOverview license={ref} />
              <ActivationsTable licenseId={license.id} canManage={canManage && license.status !== 'REVOKED'} />
              {canManage && license.status !== 'REVOKED' && <OfflineCard license={license} />}
              {license.floatingSeats !== null && <FloatingSessionsCard licenseId={license.id} />}
              {license.status !== 'REVOKED' && <IntegratePanel license={{ keyHint: license.keyHint, productName: license.product.name, nodeLocked: license.nodeLocked, floatingSeats: license.floatingSeats }} />}
              <UsageCard licenseId={license.id} inactive={ref.quotaChangeBlockedReason} />
            </Stack>
          </>
          );
        }}
      </QueryState>
    </>
  );
}
