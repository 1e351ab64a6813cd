import type { EnumOf } from '../../graphql';

// Activity-log action names (spec §2.6) and their wording in the console. Every action of the schema is
// listed: a missing or stale one fails the type check after `graphql:types`.
const ACTIONS: Record<ActivityAction, true> = {
  ChangePassword: true,
  CreateApiKey: true,
  CreateLicense: true,
  CreateProduct: true,
  CreateUser: true,
  DeactivateActivation: true,
  DeactivateUser: true,
  DeleteProduct: true,
  DisableMfa: true,
  EnableMfa: true,
  FailedLogin: true,
  InviteUser: true,
  LockAccount: true,
  Login: true,
  Logout: true,
  ReactivateUser: true,
  RevokeApiKey: true,
  RevokeInvitation: true,
  RevokeLicense: true,
  UnlockAccount: true,
  UpdateCompanySettings: true,
  UpdateLicense: true,
  UpdateProduct: true,
  UpdateUser: true,
  UseBackupCode: true,
};

export const ACTIVITY_ACTIONS = Object.keys(ACTIONS) as ActivityAction[];

export type ActivityAction = EnumOf<'ActivityAction'>;

const SPECIAL: Partial<Record<string, string>> = {
  DisableMfa: 'Disable MFA',
  EnableMfa: 'Enable MFA',
  UseBackupCode: 'Use backup code',
  CreateApiKey: 'Create API key',
  RevokeApiKey: 'Revoke API key',
  Login: 'Sign in',
  Logout: 'Sign out',
  FailedLogin: 'Failed sign-in',
};

/** "CreateLicense" → "Create license". */
export function actionLabel(action: string): string {
  return SPECIAL[action] ?? action.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/ (\w)/g, (_, c: string) => ` ${c.toLowerCase()}`);
}

/** Badge colour by kind of action. */
export function actionColor(action: string): string {
  if (/^(Revoke|Delete|Deactivate|Lock|Failed|Disable)/.test(action)) return 'red';
  if (/^Create|^Enable|^Reactivate|^Unlock/.test(action)) return 'teal';
  if (/^Update|^Change/.test(action)) return 'blue';
  return 'gray';
}
