import { resolveArrayConnection } from '@pothos/plugin-relay';
import { AppError } from '../domain/errors.js';
import type { Page, PageArgs } from '../services/listing.js';

// Relay connections over the services' lists. Large lists (licenses, activations, activity, emails) are keyset
// pages from the services (newest first, counts capped where a table is large); small, bounded lists (products,
// users, API keys, invitations, floating sessions) are loaded whole and sliced here.

export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/**
 * The page arguments of a keyset list. These lists page forward from the newest record (first/after); `last` and
 * `before` answer InvalidRequest rather than scanning from the far end of a large table.
 */
export function forwardPage(args: ConnectionArgs): PageArgs {
  if ((args.last !== null && args.last !== undefined) || (args.before !== null && args.before !== undefined)) {
    throw new AppError('InvalidRequest', 'This list pages forward from the newest record: use first and after.', {
      fields: { [args.last !== null && args.last !== undefined ? 'last' : 'before']: 'not supported on this list' },
    });
  }
  return { first: args.first, after: args.after };
}

/** A service page as a Relay connection. */
export function pageConnection<T>(page: Page<T>, args: ConnectionArgs) {
  return {
    edges: page.nodes.map((node, index) => ({ node, cursor: page.cursors[index] })),
    pageInfo: {
      hasNextPage: page.pageInfo.hasNextPage,
      hasPreviousPage: Boolean(args.after),
      startCursor: page.cursors[0] ?? null,
      endCursor: page.pageInfo.endCursor,
    },
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
