import { z } from 'zod';
import type { Database } from '../db/database.js';
import { AppError } from '../domain/errors.js';
import { Prisma } from '../generated/prisma/client.js';

// Helpers shared by the management lists: id checks and opaque-cursor pagination.

/** Any 8-4-4-4-12 hex id. A malformed id must answer NotFound (or match nothing), never a database error. */
export const isUuid = (value: string) => z.guid().safeParse(value).success;

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export interface PageArgs {
  first?: number | null;
  after?: string | null;
}

export interface Page<T> {
  nodes: T[];
  /** Exact up to the cap; at the cap when `totalCountCapped` (the console shows "10,000+"). */
  totalCount: number;
  totalCountCapped: boolean;
  pageInfo: { endCursor: string | null; hasNextPage: boolean };
  /** The cursor of each node (a node's cursor as `after` starts the next page after it). */
  cursors: string[];
}

/** `first`: 20 by default, 1–100. */
export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw new AppError('InvalidRequest', `first must be between 1 and ${MAX_PAGE_SIZE}.`, { fields: { first: `1–${MAX_PAGE_SIZE}` } });
  }
  return first;
}

/** A cursor is the sort key of a row, base64url-encoded JSON: opaque to clients, stable across inserts. */
export const encodeCursor = (key: readonly (string | number)[]) => Buffer.from(JSON.stringify(key)).toString('base64url');

export function decodeCursor<S extends z.ZodType>(cursor: string, schema: S): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new AppError('InvalidRequest', 'after is not a cursor of this list.', { fields: { after: 'invalid cursor' } });
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
 */
export function countUpTo(db: Database, table: Prisma.Sql, conditions: Prisma.Sql) {
  return async (take: number) => {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} WHERE ${conditions} LIMIT ${take}) AS matching`;
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

/** Builds the page from `size + 1` fetched rows (the extra one only says whether a next page exists). */
export function toPage<T>(rows: T[], size: number, count: number | Count, cursorOf: (row: T) => readonly (string | number)[]): Page<T> {
  const nodes = rows.slice(0, size);
  const last = nodes[nodes.length - 1];
  const { totalCount, totalCountCapped } = typeof count === 'number' ? { totalCount: count, totalCountCapped: false } : count;
  const cursors = nodes.map((node) => encodeCursor(cursorOf(node)));
  return { nodes, totalCount, totalCountCapped, cursors, pageInfo: { endCursor: last ? cursors[cursors.length - 1] : null, hasNextPage: rows.length > size } };
}
