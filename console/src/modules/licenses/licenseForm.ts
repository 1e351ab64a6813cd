import type { VariablesOf } from '../../graphql';
import type { CreateLicenseMutation } from './graphql/documents';

/** The editable attributes of a license, as the form holds them (strings for optional inputs). */
export interface LicenseForm {
  productId: string;
  maxActivations: number | '';
  perpetual: boolean;
  /** YYYY-MM-DD (UTC day; the license expires at the end of it). */
  expiresOn: string;
  customerEmail: string;
  isTrial: boolean;
  nodeLocked: boolean;
  features: string[];
  customFields: { key: string; value: string }[];
  minVersion: string;
  maxVersion: string;
  offlineGraceDays: number | '';
  gracePeriodDays: number | '';
  floatingSeats: number | '';
  maintenanceOn: string;
}

export type LicenseAttributes = Omit<VariablesOf<typeof CreateLicenseMutation>['input'], 'productId'>;

export const EMPTY_LICENSE_FORM: LicenseForm = {
  productId: '',
  maxActivations: 1,
  perpetual: true,
  expiresOn: '',
  customerEmail: '',
  isTrial: false,
  nodeLocked: false,
  features: [],
  customFields: [],
  minVersion: '',
  maxVersion: '',
  offlineGraceDays: '',
  gracePeriodDays: '',
  floatingSeats: '',
  maintenanceOn: '',
};

const endOfDay = (day: string) => `${day}T23:59:59.999Z`;
const dayOf = (iso: string | null | undefined) => (iso ? iso.slice(0, 10) : '');
const orNull = (text: string) => text.trim() || null;
const numberOrNull = (value: number | '') => (value === '' ? null : value);

/** The form as the API's license attributes (blank optional fields → null). */
export function toLicenseAttributes(form: LicenseForm): LicenseAttributes {
  const customFields = form.customFields.filter((field) => field.key.trim());
  return {
    maxActivations: form.maxActivations === '' ? 0 : form.maxActivations,
    expiresAt: form.perpetual || !form.expiresOn ? null : endOfDay(form.expiresOn),
    customerEmail: orNull(form.customerEmail),
    isTrial: form.isTrial,
    nodeLocked: form.nodeLocked,
    features: form.features.map((feature) => feature.trim()).filter(Boolean),
    customFields: customFields.length ? Object.fromEntries(customFields.map((field) => [field.key.trim(), field.value])) : null,
    minVersion: orNull(form.minVersion),
    maxVersion: orNull(form.maxVersion),
    offlineGraceDays: numberOrNull(form.offlineGraceDays),
    gracePeriodDays: numberOrNull(form.gracePeriodDays),
    floatingSeats: numberOrNull(form.floatingSeats),
    maintenanceExpiresAt: form.maintenanceOn ? endOfDay(form.maintenanceOn) : null,
  };
}

export interface LicenseLike {
  product: { id: string };
  maxActivations: number;
  expiresAt: string | null;
  customerEmail: string | null;
  isTrial: boolean;
  nodeLocked: boolean;
  features: string[];
  customFields: unknown;
  minVersion: string | null;
  maxVersion: string | null;
  offlineGraceDays: number | null;
  gracePeriodDays: number | null;
  floatingSeats: number | null;
  maintenanceExpiresAt: string | null;
}

/** A stored license as form state (for editing). */
export function licenseToForm(license: LicenseLike): LicenseForm {
  const custom = license.customFields && typeof license.customFields === 'object' ? (license.customFields as Record<string, unknown>) : {};
  return {
    productId: license.product.id,
    maxActivations: license.maxActivations,
    perpetual: !license.expiresAt,
    expiresOn: dayOf(license.expiresAt),
    customerEmail: license.customerEmail ?? '',
    isTrial: license.isTrial,
    nodeLocked: license.nodeLocked,
    features: [...license.features],
    customFields: Object.entries(custom).map(([key, value]) => ({ key, value: String(value) })),
    minVersion: license.minVersion ?? '',
    maxVersion: license.maxVersion ?? '',
    offlineGraceDays: license.offlineGraceDays ?? '',
    gracePeriodDays: license.gracePeriodDays ?? '',
    floatingSeats: license.floatingSeats ?? '',
    maintenanceOn: dayOf(license.maintenanceExpiresAt),
  };
}

/** Only the attributes that differ (an update sends just these: the activity log shows a clean diff). */
export function changedAttributes(before: LicenseAttributes, after: LicenseAttributes): Partial<LicenseAttributes> {
  const changes: Record<string, unknown> = {};
  for (const key of Object.keys(after) as (keyof LicenseAttributes)[]) {
    if (JSON.stringify(before[key] ?? null) !== JSON.stringify(after[key] ?? null)) changes[key] = after[key];
  }
  return changes as Partial<LicenseAttributes>;
}

/** Problems the user can fix before sending, by field. */
export function validateLicenseForm(form: LicenseForm, { requireProduct = true } = {}): Partial<Record<keyof LicenseForm, string>> {
  const problems: Partial<Record<keyof LicenseForm, string>> = {};
  if (requireProduct && !form.productId) problems.productId = 'Choose a product.';
  if (form.maxActivations === '' || form.maxActivations < 1) problems.maxActivations = 'At least 1.';
  if (!form.perpetual && !form.expiresOn) problems.expiresOn = 'Pick an expiry date, or make it perpetual.';
  if (form.customerEmail.trim() && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(form.customerEmail.trim())) problems.customerEmail = 'Not an email address.';
  if (form.floatingSeats !== '' && form.floatingSeats < 1) problems.floatingSeats = 'At least 1, or leave empty for none.';
  if (form.offlineGraceDays !== '' && form.offlineGraceDays < 0) problems.offlineGraceDays = '0 or more, or leave empty for no offline use.';
  if (form.gracePeriodDays !== '' && form.gracePeriodDays < 0) problems.gracePeriodDays = '0 or more, or leave empty for none.';
  const keys = form.customFields.map((field) => field.key.trim()).filter(Boolean);
  if (new Set(keys).size !== keys.length) problems.customFields = 'Each custom field name once.';
  return problems;
}

const SERVER_FIELD: Record<string, keyof LicenseForm> = { expiresAt: 'expiresOn', maintenanceExpiresAt: 'maintenanceOn' };

/** Client problems first, then the server's per-field errors (InvalidRequest `fields`) on the matching input. */
export function formProblems(client: Partial<Record<keyof LicenseForm, string>>, server: Record<string, string>, showClient: boolean) {
  const problems: Partial<Record<keyof LicenseForm, string>> = {};
  for (const [field, message] of Object.entries(server)) {
    const key = (SERVER_FIELD[field] ?? field.split('.')[0]) as keyof LicenseForm;
    problems[key] = message;
  }
  return showClient ? { ...problems, ...client } : problems;
}
