import semver from 'semver';
import { z } from 'zod';
import { StorableDate } from '../validation.js';

// The attributes of a license a vendor sets, and their rules: createLicense and updateLicense check them, the CSV
// import checks each row with them, and a plan (services/plans.ts) holds the same ones (its periods standing for the
// dates).

const version = z
  .string()
  .trim()
  .refine((value) => semver.valid(value, { loose: true }) ?? semver.coerce(value), 'must be a semantic version such as 1.4.2');
export const days = z.number().int().min(0).max(3650);
/** The most seats (activations, floating sessions) a license takes. */
export const MAX_SEATS = 1_000_000;

export const LicenseAttributesObject = z
  .object({
    maxActivations: z.number().int().min(1).max(MAX_SEATS),
    expiresAt: StorableDate.nullable().optional(),
    isTrial: z.boolean().optional(),
    nodeLocked: z.boolean().optional(),
    offlineGraceDays: days.nullable().optional(),
    gracePeriodDays: days.nullable().optional(),
    features: z.array(z.string().trim().min(1).max(100)).max(100).optional(),
    customFields: z.record(z.string().min(1).max(100), z.string().max(2000)).nullable().optional(),
    minVersion: version.nullable().optional(),
    maxVersion: version.nullable().optional(),
    maintenanceExpiresAt: StorableDate.nullable().optional(),
    customerEmail: z.email().nullable().optional(),
    /** Concurrent floating sessions allowed; null: none. */
    floatingSeats: z.number().int().min(1).max(MAX_SEATS).nullable().optional(),
  });
// Zod runs this object check even when a version failed its own check: an unparsable one is reported there, not here.
export const versionsInOrder = (license: { minVersion?: string | null; maxVersion?: string | null }) => {
  const min = license.minVersion ? semver.coerce(license.minVersion) : null;
  const max = license.maxVersion ? semver.coerce(license.maxVersion) : null;
  return !min || !max || !semver.gt(min, max);
};
export const VERSION_ORDER = 'minVersion must not be greater than maxVersion';

/** Every attribute of a license a vendor sets. */
export const LicenseAttributesSchema = LicenseAttributesObject.refine(versionsInOrder, { message: VERSION_ORDER, path: ['minVersion'] });
export const LICENSE_ATTRIBUTES = Object.keys(LicenseAttributesObject.shape) as (keyof typeof LicenseAttributesObject.shape)[];
/** Attributes as callers send them: any may be absent or null, customFields any JSON (the schema decides what is allowed). */
type AttributesIn = z.input<typeof LicenseAttributesObject>;
export type LicenseInput = { [K in keyof AttributesIn]?: (K extends 'customFields' ? unknown : AttributesIn[K]) | null };

