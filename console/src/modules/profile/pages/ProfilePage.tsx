import { SimpleGrid, Stack, Text } from '@mantine/core';
import { PageHeader } from '../../../ui/PageHeader';
import { useCurrentUser } from '../../auth/hooks/useCurrentUser';
import { ChangePasswordCard } from '../components/ChangePasswordCard';
import { MfaCard } from '../components/MfaCard';
import { NotificationPreferencesCard } from '../components/NotificationPreferencesCard';

export function ProfilePage() {
  const { user } = useCurrentUser();
  return (
    <>
      <PageHeader
        title="My profile"
        description={
          <Text span size="sm">
            Signed in as <b>{user.email}</b> ({user.role === 'COMPANY_ADMIN' ? 'admin' : 'read-only'}).
          </Text>
        }
      />
      <Stack>
        <MfaCard />
        <SimpleGrid cols={{ base: 1, md: 2 }}>
          <ChangePasswordCard />
          <NotificationPreferencesCard />
        </SimpleGrid>
      </Stack>
    </>
  );
}
