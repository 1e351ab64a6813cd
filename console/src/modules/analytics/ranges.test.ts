import { describe, expect, it } from 'vitest';
import { parseGranularity, poolBucketFor } from './ranges';

describe('analytics ranges', () => {
  it('the floating pool follows the chosen granularity (weeks for months: the pool has no month bucket)', () => {
    expect((['HOUR', 'DAY', 'WEEK', 'MONTH'] as const).map(poolBucketFor)).toEqual(['HOUR', 'DAY', 'WEEK', 'WEEK']);
  });

  it('HOUR is not a choice in the URL (Today is always by hour, the server decides)', () => {
    expect(parseGranularity('HOUR')).toBe('DAY');
    expect(parseGranularity('WEEK')).toBe('WEEK');
  });
});
