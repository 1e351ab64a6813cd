import { describe, expect, it } from 'vitest';
import { actionColor, actionLabel } from './actions';
import { diffRows, isDiff } from './diff';

describe('activity details', () => {
  it('an update diff gives one row per changed field with before and after', () => {
    const details = { before: { maxActivations: 3, customerEmail: null, features: ['a'] }, after: { maxActivations: 5, customerEmail: 'x@y.z', features: ['a', 'b'] } };
    expect(isDiff(details)).toBe(true);
    expect(diffRows(details)).toEqual([
      { field: 'customerEmail', before: 'null', after: 'x@y.z', changed: true },
      { field: 'features', before: '["a"]', after: '["a","b"]', changed: true },
      { field: 'maxActivations', before: '3', after: '5', changed: true },
    ]);
  });

  it('a field only on one side shows a dash on the other', () => {
    expect(diffRows({ before: {}, after: { name: 'New' } })).toEqual([{ field: 'name', before: '—', after: 'New', changed: true }]);
  });

  it('flat details list their values', () => {
    expect(isDiff({ role: 'ReadOnly' })).toBe(false);
    expect(diffRows({ role: 'ReadOnly', name: null })).toEqual([
      { field: 'name', after: 'null', changed: false },
      { field: 'role', after: 'ReadOnly', changed: false },
    ]);
  });

  it('no details, no rows', () => {
    expect(diffRows(null)).toEqual([]);
    expect(diffRows(undefined)).toEqual([]);
  });

  it('labels and colours actions', () => {
    expect(actionLabel('CREATE_LICENSE')).toBe('Create license');
    expect(actionLabel('UPDATE_COMPANY_SETTINGS')).toBe('Update company settings');
    expect(actionLabel('ENABLE_MFA')).toBe('Enable MFA');
    expect(actionColor('REVOKE_LICENSE')).toBe('red');
    expect(actionColor('CREATE_PRODUCT')).toBe('teal');
    expect(actionColor('UPDATE_LICENSE')).toBe('blue');
    expect(actionColor('LOGIN')).toBe('gray');
  });
});
