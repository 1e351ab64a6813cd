import { graphql } from '../../../graphql';

export const SessionFields = graphql(`
  fragment SessionFields on SessionPayload {
    status
    accessToken
    accessTokenExpiresAt
  }
`);

export const NeedsSetupQuery = graphql(`
  query NeedsSetup {
    needsSetup
  }
`);

export const SetupMutation = graphql(
  `
    mutation Setup($companyName: String!, $keyPrefix: String!, $email: String!, $password: String!, $name: String) {
      setup(companyName: $companyName, keyPrefix: $keyPrefix, email: $email, password: $password, name: $name) {
        ...SessionFields
      }
    }
  `,
  [SessionFields],
);

export const LoginMutation = graphql(
  `
    mutation Login($email: String!, $password: String!, $totpCode: String, $backupCode: String) {
      login(email: $email, password: $password, totpCode: $totpCode, backupCode: $backupCode) {
        ...SessionFields
      }
    }
  `,
  [SessionFields],
);

export const LogoutMutation = graphql(`
  mutation Logout {
    logout
  }
`);

export const CurrentUserQuery = graphql(`
  query CurrentUser {
    me {
      id
      email
      name
      role
      mfaEnabled
    }
    company {
      id
      name
      keyPrefix
    }
  }
`);

export const InvitationPreviewQuery = graphql(`
  query InvitationPreview($token: String!) {
    invitation(token: $token) {
      email
      name
      role
      companyName
      expiresAt
    }
  }
`);

export const AcceptInvitationMutation = graphql(
  `
    mutation AcceptInvitation($token: String!, $password: String!, $name: String) {
      acceptInvitation(token: $token, password: $password, name: $name) {
        ...SessionFields
      }
    }
  `,
  [SessionFields],
);
