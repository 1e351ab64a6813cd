import { describe, expect, it } from 'vitest';
import { changedFields } from '../../lib/changes';
import { releaseAttributesSchema, toReleaseAttributes, type ReleaseAttributesForm } from './releaseForm';

const stored: ReleaseAttributesForm = { channel: 'BETA', notes: 'Faster.', requiredFeatures: ['sync'], requiresMaintenance: false };

describe('the release form', () => {
  it('sends only what changed; emptied notes are none', () => {
    const before = toReleaseAttributes(stored);
    expect(changedFields(before, toReleaseAttributes({ ...stored }))).toEqual({});
    expect(changedFields(before, toReleaseAttributes({ ...stored, channel: 'RC', notes: '  ' }))).toEqual({ channel: 'RC', notes: null });
    expect(changedFields(before, toReleaseAttributes({ ...stored, requiredFeatures: ['sync', ' export '] }))).toEqual({ requiredFeatures: ['sync', 'export'] });
  });

  it('refuses what the server would, on the field that holds it', () => {
    const problems = (values: Partial<ReleaseAttributesForm>) => releaseAttributesSchema.safeParse({ ...stored, ...values }).error?.issues.map((issue) => issue.path.join('.'));
    expect(problems({})).toBeUndefined();
    expect(problems({ requiredFeatures: ['x'.repeat(101)] })).toEqual(['requiredFeatures']);
    expect(problems({ requiredFeatures: ['  '] })).toEqual(['requiredFeatures']);
    expect(problems({ notes: 'x'.repeat(100_001) })).toEqual(['notes']);
  });
});
