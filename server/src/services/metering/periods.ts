import type { MeterPeriod } from '../../generated/prisma/enums.js';

export type { MeterPeriod };
export const METER_PERIODS = ['day', 'month', 'year', 'lifetime'] as const satisfies readonly MeterPeriod[];

/**
 * Event names: lower-case words of letters, digits and underscores, separated by dots, starting with a
 * letter; at most 64 characters. Examples: `export`, `api.calls`, `render.frames_4k`.
 */
export const EVENT_NAME_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;
export const EVENT_NAME_MAX_LENGTH = 64;

/** The calendar period (UTC) containing `at`: [start, end). Lifetime has no bounds (both null). */
export function periodBounds(period: MeterPeriod, at: Date): { start: Date | null; end: Date | null } {
  const [y, m, d] = [at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()];
  switch (period) {
    case 'day':
      return { start: new Date(Date.UTC(y, m, d)), end: new Date(Date.UTC(y, m, d + 1)) };
    case 'month':
      return { start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) };
    case 'year':
      return { start: new Date(Date.UTC(y, 0, 1)), end: new Date(Date.UTC(y + 1, 0, 1)) };
    case 'lifetime':
      return { start: null, end: null };
  }
}

/** A Prisma filter on occurredAt for the period (none for lifetime). */
export function occurredWithin(bounds: { start: Date | null; end: Date | null }) {
  return bounds.start && bounds.end ? { occurredAt: { gte: bounds.start, lt: bounds.end } } : {};
}
