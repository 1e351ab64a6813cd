import { useCallback, useMemo } from 'react';
import { useSearchParams } from 'react-router';

/**
 * How the query changes: in place (typing does not flood the back stack), and rendered at once. react-router hands a
 * functional update the query of the render that made the callback; rendered in a transition, a second choice made
 * before the first had rendered would start from the old query and undo the first.
 */
const QUERY_UPDATE = { replace: true, flushSync: true } as const;

/**
 * A page's choices (list filters, a chart's range) kept in the URL query (shareable, survive reload, back button
 * works). Empty values are removed. `set` changes them with `QUERY_UPDATE`.
 */
export function useSearchFilters<K extends string>(keys: readonly K[]) {
  const [params, setParams] = useSearchParams();
  const values = useMemo(() => Object.fromEntries(keys.map((key) => [key, params.get(key) ?? ''])) as Record<K, string>, [params, keys]);
  const set = useCallback(
    (changes: Partial<Record<K, string | null>>) =>
      setParams(
        (current) => {
          const next = new URLSearchParams(current);
          for (const [key, value] of Object.entries(changes) as [K, string | null][]) {
            if (value) next.set(key, value);
            else next.delete(key);
          }
          return next;
        },
        QUERY_UPDATE,
      ),
    [setParams],
  );
  const clear = useCallback(() => setParams(new URLSearchParams(), QUERY_UPDATE), [setParams]);
  const active = keys.some((key) => values[key] !== '');
  return { values, set, clear, active };
}
