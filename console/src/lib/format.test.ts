import { describe, expect, it } from 'vitest';
import { graceText, initialsOf } from './format';

describe('format', () => {
  it('initials: first and last word of the name, else the first two letters', () => {
    expect(initialsOf('Nora Admin', 'nora@acme.test')).toBe('NA');
    expect(initialsOf('Ada Lovelace King', 'ada@acme.test')).toBe('AK');
    expect(initialsOf('Ada', 'ada@acme.test')).toBe('AD');
    expect(initialsOf(null, 'zoe@acme.test')).toBe('ZO');
    expect(initialsOf('   ', 'zoe@acme.test')).toBe('ZO');
  });

  it('grace: none (null) is not zero days', () => {
    expect(graceText(null)).toBe('none');
    expect(graceText(0)).toBe('0 days');
    expect(graceText(1)).toBe('1 day');
    expect(graceText(7)).toBe('7 days');
  });
});
