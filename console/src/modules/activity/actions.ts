import type { EnumOf } from '../../graphql';

// Activity-log action names (docs/integrate/management-api.md "Activity log") and their wording in the console. Every action of the schema is
// listed: a missing or stale one fails the type check after `graphql:types`.
const ACTIONS: Record<ActivityAction, true> = {
  ACTIVATE_OFFLINE: true,
  CHANGE_PASSWORD: true,
  CREATE_API_KEY: true,
  CREATE_LICENSE: true,
  CREATE_PAYMENT_CONNECTION: true,
  CREATE_PLAN: true,
  DELETE_PAYMENT_CONNECTION: true,
  MAP_PAYMENT_PRICE: true,
  UNMAP_PAYMENT_PRICE: true,
  UPDATE_PAYMENT_CONNECTION: true,
  CREATE_PRODUCT: true,
  CREATE_USER: true,
  CREATE_WEBHOOK_ENDPOINT: true,
  CUSTOMER_SIGN_IN: true,
  CUSTOMER_SIGN_OUT: true,
  DEACTIVATE_ACTIVATION: true,
  DEACTIVATE_OFFLINE: true,
  DEACTIVATE_USER: true,
  DELETE_PLAN: true,
  DELETE_PRODUCT: true,
  DELETE_WEBHOOK_ENDPOINT: true,
  DISABLE_MFA: true,
  DISABLE_WEBHOOK_ENDPOINT: true,
  ENABLE_MFA: true,
  FAILED_LOGIN: true,
  FAILED_REAUTHENTICATION: true,
  INVITE_USER: true,
  IMPORT_KEYGEN_ACCOUNT: true,
  ISSUE_LICENSE_FILE: true,
  LOCK_ACCOUNT: true,
  LOGIN: true,
  LOGOUT: true,
  REACTIVATE_USER: true,
  REAUTHENTICATE: true,
  REINSTATE_LICENSE: true,
  REISSUE_LICENSE_KEY: true,
  RENEW_LICENSE: true,
  RESEND_WEBHOOK_DELIVERY: true,
  RESET_PASSWORD: true,
  REVOKE_API_KEY: true,
  REVOKE_INVITATION: true,
  REVOKE_LICENSE: true,
  ROTATE_WEBHOOK_SECRET: true,
  SEND_PASSWORD_RESET_LINK: true,
  SEND_TEST_WEBHOOK_EVENT: true,
  SUSPEND_LICENSE: true,
  TRANSFER_LICENSE: true,
  UNLOCK_ACCOUNT: true,
  UPDATE_COMPANY_SETTINGS: true,
  UPDATE_LICENSE: true,
  UPDATE_PLAN: true,
  UPDATE_PRODUCT: true,
  UPDATE_USER: true,
  UPDATE_WEBHOOK_ENDPOINT: true,
  USE_BACKUP_CODE: true,
  CREATE_RELEASE: true,
  UPDATE_RELEASE: true,
  PUBLISH_RELEASE: true,
  YANK_RELEASE: true,
  DELETE_RELEASE: true,
  UPLOAD_ARTIFACT: true,
  DELETE_ARTIFACT: true,
  SET_ARTIFACT_TAURI_SIGNATURE: true,
  SET_METER_QUOTA: true,
  REMOVE_METER_QUOTA: true,
  END_FLOATING_SESSION: true,
};

export const ACTIVITY_ACTIONS = Object.keys(ACTIONS) as ActivityAction[];

export type ActivityAction = EnumOf<'ActivityAction'>;

const SPECIAL: Partial<Record<string, string>> = {
  DISABLE_MFA: 'Disable MFA',
  ENABLE_MFA: 'Enable MFA',
  USE_BACKUP_CODE: 'Use backup code',
  CREATE_API_KEY: 'Create API key',
  REVOKE_API_KEY: 'Revoke API key',
  LOGIN: 'Sign in',
  LOGOUT: 'Sign out',
  FAILED_LOGIN: 'Failed sign-in',
  ACTIVATE_OFFLINE: 'Offline activation',
  DEACTIVATE_OFFLINE: 'Offline deactivation',
};

/** "CREATE_LICENSE" → "Create license". */
export function actionLabel(action: string): string {
  return SPECIAL[action] ?? action.charAt(0) + action.slice(1).toLowerCase().replace(/_/g, ' ');
}

/** Badge colour by kind of action. */
export function actionColor(action: string): string {
  if (/^(REVOKE|DELETE|DEACTIVATE|LOCK|FAILED|DISABLE|END)_/.test(action)) return 'red';
  if (/^(SUSPEND|REISSUE)_/.test(action)) return 'orange';
  if (/^(CREATE|ENABLE|REACTIVATE|REINSTATE|RENEW|UNLOCK|ACTIVATE)_/.test(action)) return 'teal';
  if (/^(UPDATE|CHANGE|TRANSFER|SET)_/.test(action)) return 'blue';
  return 'gray';
}
