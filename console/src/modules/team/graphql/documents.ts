import { graphql } from '../../../graphql';
import { ApiKeyFields } from '../components/ApiKeysTable';
import { InvitationFields } from '../components/InvitationsTable';
import { TeamMemberFields } from '../components/MembersTable';

export const UsersQuery = graphql(
  `
    query Users {
      users {
        nodes {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);

export const UpdateUserMutation = graphql(
  `
    mutation UpdateUser($id: ID!, $name: String, $role: Role) {
      updateUser(input: { id: $id, name: $name, role: $role }) {
        user {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);

export const DeactivateUserMutation = graphql(
  `
    mutation DeactivateUser($id: ID!) {
      deactivateUser(input: { id: $id }) {
        user {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);

export const ReactivateUserMutation = graphql(
  `
    mutation ReactivateUser($id: ID!) {
      reactivateUser(input: { id: $id }) {
        user {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);

export const ApiKeysQuery = graphql(
  `
    query ApiKeys {
      apiKeys {
        nodes {
          ...ApiKeyFields
        }
      }
    }
  `,
  [ApiKeyFields],
);

export const CreateApiKeyMutation = graphql(
  `
    mutation CreateApiKey($name: String!, $role: Role!) {
      createApiKey(input: { name: $name, role: $role }) {
        key
        apiKey {
          ...ApiKeyFields
        }
      }
    }
  `,
  [ApiKeyFields],
);

export const RevokeApiKeyMutation = graphql(
  `
    mutation RevokeApiKey($id: ID!) {
      revokeApiKey(input: { id: $id }) {
        apiKey {
          ...ApiKeyFields
        }
      }
    }
  `,
  [ApiKeyFields],
);

export const InvitationsQuery = graphql(
  `
    query Invitations {
      invitations {
        nodes {
          ...InvitationFields
        }
      }
    }
  `,
  [InvitationFields],
);

export const InviteUserMutation = graphql(
  `
    mutation InviteUser($email: String!, $role: Role!, $name: String) {
      inviteUser(input: { email: $email, role: $role, name: $name }) {
        invitation {
          ...InvitationFields
        }
      }
    }
  `,
  [InvitationFields],
);

export const RevokeInvitationMutation = graphql(
  `
    mutation RevokeInvitation($id: ID!) {
      revokeInvitation(input: { id: $id }) {
        invitation {
          ...InvitationFields
        }
      }
    }
  `,
  [InvitationFields],
);

export const UnlockUserMutation = graphql(
  `
    mutation UnlockUser($id: ID!) {
      unlockUser(input: { id: $id }) {
        wasLocked
        user {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);

export const ResetUserMfaMutation = graphql(
  `
    mutation ResetUserMfa($id: ID!) {
      resetUserMfa(input: { id: $id }) {
        user {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);

export const SendPasswordResetLinkMutation = graphql(
  `
    mutation SendPasswordResetLink($id: ID!) {
      sendPasswordResetLink(input: { id: $id }) {
        user {
          ...TeamMemberFields
        }
      }
    }
  `,
  [TeamMemberFields],
);
