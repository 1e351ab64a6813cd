import { resolveArrayConnection } from '@pothos/plugin-relay';
import { AppError } from '../domain/errors.js';
import type { Page, PageArgs } from '../services/listing.js';

// Relay connections over the services' lists. Large lists (licenses, activations, activity, emails, releases) are keyset
// pages from the services in both directions (newest first, counts capped where a table is large); small, bounded lists (products,
// users, API keys, invitations, floating sessions) are loaded whole and sliced here.

export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/**
 * The page arguments of a keyset list: all four go to the service, which walks its index forward (first/after) or
 * backward (last/before) and refuses a mix of the two (`keyset` in services/listing.ts).
 */
export function keysetPage(args: ConnectionArgs): PageArgs {
  return { first: args.first, after: args.after, last: args.last, before: args.before };
}

/** A service page as a Relay connection. */
export function pageConnection<T>(page: Page<T>) {
  return {
    edges: page.nodes.map((node, index) => ({ node, cursor: page.cursors[index] })),
    pageInfo: page.pageInfo,
    totalCount: page.totalCount,
    totalCountCapped: page.totalCountCapped,
  };
}

/** A whole (small) list as a connection: first/after/last/before over its order; pages of 1–100, 100 by default. */
export function arrayConnection<T>(args: ConnectionArgs, items: readonly T[]) {
  for (const name of ['first', 'last'] as const) {
    const value = args[name];
    if (value !== null && value !== undefined && (!Number.isInteger(value) || value < 0 || value > 100)) {
      throw new AppError('InvalidRequest', `${name} must be between 0 and 100.`, { fields: { [name]: '0–100' } });
    }
  }
  try {
    return { ...resolveArrayConnection({ args, defaultSize: 100, maxSize: 100 }, items), totalCount: items.length };
  } catch {
    throw new AppError('InvalidRequest', 'after/before is not a cursor of this list.', { fields: { after: 'invalid cursor' } });
  }
}

/** A lookup that answers null instead of NotFound (a missing record, or another company's). */
export async function orNull<T>(lookup: Promise<T>): Promise<T | null> {
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof AppError && error.code === 'NotFound') return null;
    throw error;
  }
}
