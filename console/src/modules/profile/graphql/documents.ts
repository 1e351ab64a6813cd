import { graphql } from '../../../graphql';

export const ChangePasswordMutation = graphql(`
  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {
    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)
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
    confirmMfaEnrollment(code: $code)
  }
`);

export const DisableMfaMutation = graphql(`
  mutation DisableMfa($totpCode: String, $backupCode: String) {
    disableMfa(totpCode: $totpCode, backupCode: $backupCode)
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
    updateNotificationPreferences(digestEmailEnabled: $digestEmailEnabled, expiryEmailEnabled: $expiryEmailEnabled) {
      digestEmailEnabled
      expiryEmailEnabled
    }
  }
`);
