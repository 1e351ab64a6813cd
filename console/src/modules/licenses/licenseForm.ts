import { zod4Resolver } from 'mantine-form-zod-resolver';
import { z } from 'zod';
import { changedFields } from '../../lib/changes';
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

export const endOfDay = (day: string) => `${day}T23:59:59.999Z`;
export const dayOf = (iso: string | null | undefined) => (iso ? iso.slice(0, 10) : '');
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
  return changedFields(before, after);
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** A number input's value: a number, or '' while empty. */
const count = z.union([z.literal(''), z.number()]);
const atLeast = (min: number, message: string) => count.refine((value) => value === '' || value >= min, message);

/** Problems the user can fix before sending, by field (the schema behind the create and edit dialogs). */
export function licenseFormSchema({ requireProduct = true } = {}) {
  return z
    .object({
      productId: requireProduct ? z.string().min(1, 'Choose a product.') : z.string(),
      maxActivations: count.refine((value) => value !== '' && value >= 1, 'At least 1.'),
      perpetual: z.boolean(),
      expiresOn: z.string(),
      customerEmail: z.string().refine((email) => !email.trim() || EMAIL.test(email.trim()), 'Not an email address.'),
      floatingSeats: atLeast(1, 'At least 1, or leave empty for none.'),
      offlineGraceDays: atLeast(0, '0 or more, or leave empty for no offline use.'),
      gracePeriodDays: atLeast(0, '0 or more, or leave empty for none.'),
      customFields: z.array(z.object({ key: z.string(), value: z.string() })).refine((fields) => {
        const keys = fields.map((field) => field.key.trim()).filter(Boolean);
        return new Set(keys).size === keys.length;
      }, 'Each custom field name once.'),
    })
    .refine((form) => form.perpetual || Boolean(form.expiresOn), { path: ['expiresOn'], message: 'Pick an expiry date, or make it perpetual.', when: () => true });
}

/** The schema's problems as a map (field → message). */
export function validateLicenseForm(form: LicenseForm, options: { requireProduct?: boolean } = {}): Partial<Record<keyof LicenseForm, string>> {
  return zod4Resolver(licenseFormSchema(options))(form as unknown as Record<string, unknown>) as Partial<Record<keyof LicenseForm, string>>;
}

/** Server input names that the form calls differently. */
export const SERVER_FIELD: Record<string, keyof LicenseForm> = { expiresAt: 'expiresOn', maintenanceExpiresAt: 'maintenanceOn' };
