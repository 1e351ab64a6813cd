import { describe, expect, it } from 'vitest';
import { serverFieldErrors } from '../../ui/useApiMutation';
import { changedAttributes, EMPTY_LICENSE_FORM, licenseToForm, SERVER_FIELD, toLicenseAttributes, validateLicenseForm } from './licenseForm';

const stored = {
  product: { id: 'p1' },
  maxActivations: 3,
  expiresAt: '2026-07-01T23:59:59.999Z',
  customerEmail: 'buyer@example.com',
  isTrial: false,
  nodeLocked: true,
  features: ['export'],
  customFields: { plan: 'pro' },
  minVersion: '2.0.0',
  maxVersion: null,
  offlineGraceDays: 7,
  gracePeriodDays: null,
  floatingSeats: null,
  maintenanceExpiresAt: null,
};

describe('license form', () => {
  it('blank optional inputs become null; perpetual means no expiry', () => {
    const attributes = toLicenseAttributes({ ...EMPTY_LICENSE_FORM, productId: 'p1', maxActivations: 2, features: [' sync ', ''] });
    expect(attributes).toEqual({
      maxActivations: 2,
      expiresAt: null,
      customerEmail: null,
      isTrial: false,
      nodeLocked: false,
      features: ['sync'],
      customFields: null,
      minVersion: null,
      maxVersion: null,
      offlineGraceDays: null,
      gracePeriodDays: null,
      floatingSeats: null,
      maintenanceExpiresAt: null,
    });
  });

  it('an expiry date is the end of that UTC day', () => {
    expect(toLicenseAttributes({ ...EMPTY_LICENSE_FORM, perpetual: false, expiresOn: '2026-07-01' }).expiresAt).toBe('2026-07-01T23:59:59.999Z');
  });

  it('round-trips a stored license through the form unchanged', () => {
    const form = licenseToForm(stored);
    expect(form).toMatchObject({ productId: 'p1', perpetual: false, expiresOn: '2026-07-01', customFields: [{ key: 'plan', value: 'pro' }], offlineGraceDays: 7, gracePeriodDays: '' });
    expect(changedAttributes(toLicenseAttributes(form), toLicenseAttributes(form))).toEqual({});
  });

  it('an edit sends only what changed', () => {
    const before = toLicenseAttributes(licenseToForm(stored));
    const after = toLicenseAttributes({ ...licenseToForm(stored), maxActivations: 5, customerEmail: '' });
    expect(changedAttributes(before, after)).toEqual({ maxActivations: 5, customerEmail: null });
  });

  it('validates before sending', () => {
    expect(validateLicenseForm(EMPTY_LICENSE_FORM)).toEqual({ productId: 'Choose a product.' });
    expect(validateLicenseForm({ ...EMPTY_LICENSE_FORM, productId: 'p', maxActivations: 0, perpetual: false, customerEmail: 'nope', customFields: [{ key: 'a', value: '1' }, { key: 'a', value: '2' }] })).toEqual({
      maxActivations: 'At least 1.',
      expiresOn: 'Pick an expiry date, or make it perpetual.',
      customerEmail: 'Not an email address.',
      customFields: 'Each custom field name once.',
    });
    expect(validateLicenseForm(EMPTY_LICENSE_FORM, { requireProduct: false })).toEqual({});
  });

  it('maps server field errors onto the inputs', () => {
    expect(serverFieldErrors({ expiresAt: 'Invalid date', minVersion: 'must not exceed maxVersion', 'customFields.plan': 'too long' }, SERVER_FIELD)).toEqual({
      expiresOn: 'Invalid date',
      minVersion: 'must not exceed maxVersion',
      customFields: 'too long',
    });
  });
});
