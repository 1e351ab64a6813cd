import { describe, expect, it } from 'vitest';
import { bucketLabel } from './buckets';

describe('bucket labels (UTC)', () => {
  it('labels days, ISO weeks and months', () => {
    expect(bucketLabel('2026-06-03T00:00:00.000Z', 'DAY')).toBe('Jun 3');
    expect(bucketLabel('2026-06-01T00:00:00.000Z', 'WEEK')).toBe('Jun 1–7');
    expect(bucketLabel('2026-06-29T00:00:00.000Z', 'WEEK')).toBe('Jun 29–Jul 5');
    expect(bucketLabel('2026-06-01T00:00:00.000Z', 'MONTH')).toBe('Jun 2026');
  });
});
