import { graphql } from '../../../graphql';

export const SessionFields = graphql(`
  fragment SessionFields on LoginSuccess {
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
      setup(input: { companyName: $companyName, keyPrefix: $keyPrefix, email: $email, password: $password, name: $name }) {
        accessToken
        accessTokenExpiresAt
      }
    }
  `,
);

export const LoginMutation = graphql(
  `
    mutation Login($email: String!, $password: String!, $totpCode: String, $backupCode: String) {
      login(input: { email: $email, password: $password, totpCode: $totpCode, backupCode: $backupCode }) {
        __typename
        ...SessionFields
        ... on PasswordChangeRequired {
          resetToken
        }
      }
    }
  `,
  [SessionFields],
);

export const LogoutMutation = graphql(`
  mutation Logout {
    logout {
      success
    }
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
      acceptInvitation(input: { token: $token, password: $password, name: $name }) {
        accessToken
        accessTokenExpiresAt
      }
    }
  `,
);

export const RequestPasswordResetMutation = graphql(`
  mutation RequestPasswordReset($email: String!) {
    requestPasswordReset(input: { email: $email }) {
      message
      emailDeliveryMode
    }
  }
`);

export const PasswordResetPreviewQuery = graphql(`
  query PasswordResetPreview($token: String!) {
    passwordReset(token: $token) {
      email
      expiresAt
      passwordMustChange
    }
  }
`);

export const ResetPasswordMutation = graphql(
  `
    mutation ResetPassword($token: String!, $password: String!) {
      resetPassword(input: { token: $token, password: $password }) {
        __typename
        ...SessionFields
      }
    }
  `,
  [SessionFields],
);
