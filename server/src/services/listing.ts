import { z } from 'zod';
import type { Database } from '../db/database.js';
import { AppError } from '../domain/errors.js';
import { StorableDate } from './validation.js';
import { Prisma } from '../generated/prisma/client.js';

// Helpers shared by the management lists: id checks and opaque-cursor pagination.

/** Any 8-4-4-4-12 hex id. A malformed id must answer NotFound (or match nothing), never a database error. */
export const isUuid = (value: string) => z.guid().safeParse(value).success;

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** Relay page arguments: `first`/`after` page forward (toward older rows), `last`/`before` backward. */
export interface PageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export interface Page<T> {
  nodes: T[];
  /** Exact up to the cap; at the cap when `totalCountCapped` (the console shows "10,000+"). */
  totalCount: number;
  totalCountCapped: boolean;
  pageInfo: { startCursor: string | null; endCursor: string | null; hasNextPage: boolean; hasPreviousPage: boolean };
  /** The cursor of each node (a node's cursor as `after` starts the page after it, as `before` the page before it). */
  cursors: string[];
}

/** `first` (or `last`): 20 by default, 1–100. */
export function pageSize(first: number | null | undefined, name: 'first' | 'last' = 'first'): number {
  if (first === null || first === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw new AppError('InvalidRequest', `${name} must be between 1 and ${MAX_PAGE_SIZE}.`, { fields: { [name]: `1–${MAX_PAGE_SIZE}` } });
  }
  return first;
}

/**
 * A keyset page request, resolved. The large lists are shown newest first (their keyset columns descending).
 * Forward (`first`/`after`) walks the list's index in display order from the cursor: key < cursor, ORDER BY key
 * DESC. Backward (`last`/`before`) walks the same index the other way: key > cursor, ORDER BY key ASC, LIMIT n + 1,
 * and `toPage` flips the rows back into display order — so `last: n, before: c` is the n rows just before c, and
 * `last: n` alone the final n rows. Never an OFFSET: a deep page starts at the cursor in the index.
 */
export interface Keyset<K> {
  size: number;
  backward: boolean;
  /** The decoded `after` (forward) or `before` (backward) cursor. */
  cursor: K | null;
  /** Prisma `orderBy` direction of the keyset columns for this walk. */
  order: 'asc' | 'desc';
  /** The comparison with the cursor (`<` forward, `>` backward) and the order of the keyset columns, as SQL. */
  sqlCmp: Prisma.Sql;
  sqlOrder: Prisma.Sql;
}

const given = (value: unknown) => value !== null && value !== undefined;

/** Resolves and checks page arguments: one direction only (first/after or last/before), a cursor of this list. */
export function keyset<S extends z.ZodType>(page: PageArgs, cursorSchema: S): Keyset<z.output<S>> {
  const forward = given(page.first) || given(page.after);
  const backward = given(page.last) || given(page.before);
  if (forward && backward) {
    const field = given(page.last) ? 'last' : 'before';
    throw new AppError('InvalidRequest', 'Page forward with first/after or backward with last/before, not both.', {
      fields: { [field]: 'cannot be combined with first/after' },
    });
  }
  const size = backward ? pageSize(page.last, 'last') : pageSize(page.first, 'first');
  const raw = backward ? page.before : page.after;
  const cursor = raw ? decodeCursor(raw, cursorSchema, backward ? 'before' : 'after') : null;
  return backward
    ? { size, backward, cursor, order: 'asc', sqlCmp: Prisma.raw('>'), sqlOrder: Prisma.raw('ASC') }
    : { size, backward, cursor, order: 'desc', sqlCmp: Prisma.raw('<'), sqlOrder: Prisma.raw('DESC') };
}

/**
 * The rows past a (createdAt, id) cursor in the walk's direction, as a Prisma `where`: createdAt ≤ t (≥ t backward;
 * an index range, so a deep page starts where the cursor is) and then (createdAt < t or id < id) — the same rows
 * as "createdAt < t, or createdAt = t and id < id".
 */
export function createdAtIdWhere(page: Keyset<readonly [string, string]>) {
  if (!page.cursor) return {};
  const at = new Date(page.cursor[0]);
  const id = page.cursor[1];
  return page.backward
    ? { createdAt: { gte: at }, OR: [{ createdAt: { gt: at } }, { id: { gt: id } }] }
    : { createdAt: { lte: at }, OR: [{ createdAt: { lt: at } }, { id: { lt: id } }] };
}

/** The cursor of a list sorted by (createdAt, id): a time PostgreSQL can store (years 1 to 9999) and a UUID. */
export const CreatedAtIdCursor = z.tuple([z.iso.datetime().refine((at) => StorableDate.safeParse(at).success), z.guid()]);

/** A cursor is the sort key of a row, base64url-encoded JSON: opaque to clients, stable across inserts. */
export const encodeCursor = (key: readonly (string | number)[]) => Buffer.from(JSON.stringify(key)).toString('base64url');

export function decodeCursor<S extends z.ZodType>(cursor: string, schema: S, field: 'after' | 'before' = 'after'): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new AppError('InvalidRequest', `${field} is not a cursor of this list.`, { fields: { [field]: 'invalid cursor' } });
  return parsed.data;
}

/**
 * Counts stop here: an exact count of 500k rows costs hundreds of milliseconds and nobody pages that far, so
 * lists report "10,000+" instead. Text search (a scan of every candidate row) stops sooner.
 */
export const COUNT_CAP = 10_000;
export const SEARCH_COUNT_CAP = 1_000;

export interface Count {
  totalCount: number;
  totalCountCapped: boolean;
}

/** `count(take)` counts at most `take` matching rows; asking for cap + 1 tells whether the cap was passed. */
export async function cappedCount(count: (take: number) => Promise<number>, cap = COUNT_CAP): Promise<Count> {
  const counted = await count(cap + 1);
  return counted > cap ? { totalCount: cap, totalCountCapped: true } : { totalCount: counted, totalCountCapped: false };
}

/**
 * `cappedCount`'s counter for `SELECT … FROM table WHERE conditions`: counts at most `take` rows, in no order.
 * (Prisma's `count({ take })` adds ORDER BY id, which makes PostgreSQL walk the primary key or sort every match.)
 * Several conditions (disjoint: each an index range, e.g. `statusRangesSql`) are counted one after the other in a
 * UNION ALL, each stopping at `take`, and the whole at `take`: a later one is not read once the cap is reached.
 */
export function countUpTo(db: Database, table: Prisma.Sql, conditions: Prisma.Sql | Prisma.Sql[]) {
  const each = Array.isArray(conditions) ? conditions : [conditions];
  return async (take: number) => {
    const parts = each.map((where) => Prisma.sql`SELECT 1 FROM ${table} WHERE ${where} LIMIT ${take}`);
    const matching = parts.length === 1 ? parts[0] : Prisma.sql`${Prisma.join(parts.map((part) => Prisma.sql`(${part})`), ' UNION ALL ')} LIMIT ${take}`;
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (${matching}) AS matching`;
    return row.n;
  };
}

/**
 * A text search matching at most this many rows is paged from its matches (found by the trigram indexes, then
 * sorted); one matching more is paged by walking the list's index, where matches are then dense enough.
 */
export const SEARCH_SORT_LIMIT = 5_000;

/**
 * One pass over a text search's matches (`matching`: a SELECT of the key columns): how many there are, up to
 * SEARCH_SORT_LIMIT + 1, and the keys of the page (`page`: a query over `counted`) — meaningful when there are no
 * more than SEARCH_SORT_LIMIT. The matches are a materialized CTE so that PostgreSQL plans them without the LIMIT:
 * with it, it expects the few matches it estimates early in a sequential scan and reads a whole table for rare
 * ones instead of asking the trigram index.
 */
export async function searchMatches<K>(db: Database, matching: Prisma.Sql, page: Prisma.Sql) {
  const [row] = await db.prisma.$queryRaw<{ n: number; keys: K[] }[]>`
    WITH matching AS MATERIALIZED (${matching}), counted AS (SELECT * FROM matching LIMIT ${SEARCH_SORT_LIMIT + 1})
    SELECT (SELECT count(*)::int FROM counted) AS n, ARRAY(${page}) AS keys`;
  const count: Count = row.n > SEARCH_COUNT_CAP ? { totalCount: SEARCH_COUNT_CAP, totalCountCapped: true } : { totalCount: row.n, totalCountCapped: false };
  return { count, keys: row.n <= SEARCH_SORT_LIMIT ? row.keys : null };
}

/**
 * Builds the page from the `size + 1` rows fetched in the walk's order (the extra one only says whether there is
 * more in that direction); a backward walk's rows are flipped into display order. The other direction's flag is
 * whether a cursor was given (its row, or the rows past it, lie that way).
 */
export function toPage<T>(rows: T[], page: Keyset<unknown>, count: number | Count, cursorOf: (row: T) => readonly (string | number)[]): Page<T> {
  const nodes = rows.slice(0, page.size);
  if (page.backward) nodes.reverse();
  const more = rows.length > page.size;
  const { totalCount, totalCountCapped } = typeof count === 'number' ? { totalCount: count, totalCountCapped: false } : count;
  const cursors = nodes.map((node) => encodeCursor(cursorOf(node)));
  const pageInfo = {
    startCursor: cursors[0] ?? null,
    endCursor: cursors[cursors.length - 1] ?? null,
    hasNextPage: page.backward ? page.cursor !== null : more,
    hasPreviousPage: page.backward ? more : page.cursor !== null,
  };
  return { nodes, totalCount, totalCountCapped, cursors, pageInfo };
}
