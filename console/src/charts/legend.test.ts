import { describe, expect, it } from 'vitest';
import { legendLabels } from './Charts';

describe('doughnut legend', () => {
  it('names each slice with its count', () => {
    expect(legendLabels(['Active', 'Expired', 'Revoked'], [1204, 3, 0])).toEqual(['Active · 1,204', 'Expired · 3', 'Revoked · 0']);
  });
});
