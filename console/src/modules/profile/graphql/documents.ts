import { graphql } from '../../../graphql';

export const ChangePasswordMutation = graphql(`
  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {
    changePassword(input: { currentPassword: $currentPassword, newPassword: $newPassword }) {
      user {
        id
      }
    }
  }
`);

export const MfaStatusQuery = graphql(`
  query MfaStatus {
    me {
      id
      mfaEnabled
    }
  }
`);

export const StartMfaEnrollmentMutation = graphql(`
  mutation StartMfaEnrollment {
    startMfaEnrollment {
      secret
      otpauthUrl
    }
  }
`);

export const ConfirmMfaEnrollmentMutation = graphql(`
  mutation ConfirmMfaEnrollment($code: String!) {
    confirmMfaEnrollment(input: { code: $code }) {
      backupCodes
      user {
        id
        mfaEnabled
      }
    }
  }
`);

export const DisableMfaMutation = graphql(`
  mutation DisableMfa($totpCode: String, $backupCode: String) {
    disableMfa(input: { totpCode: $totpCode, backupCode: $backupCode }) {
      user {
        id
        mfaEnabled
      }
    }
  }
`);

export const NotificationPreferencesQuery = graphql(`
  query NotificationPreferences {
    notificationPreferences {
      digestEmailEnabled
      expiryEmailEnabled
    }
  }
`);

export const UpdateNotificationPreferencesMutation = graphql(`
  mutation UpdateNotificationPreferences($digestEmailEnabled: Boolean, $expiryEmailEnabled: Boolean) {
    updateNotificationPreferences(input: { digestEmailEnabled: $digestEmailEnabled, expiryEmailEnabled: $expiryEmailEnabled }) {
      notificationPreferences {
        digestEmailEnabled
        expiryEmailEnabled
      }
    }
  }
`);
