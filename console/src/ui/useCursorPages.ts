import { useCallback, useState } from 'react';

/**
 * Cursor pagination state for a `first/after` connection: the cursors of the pages seen so far, so
 * "Previous" works without the API supporting backwards paging. Reset whenever the filters change.
 */
export function useCursorPages() {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const page = cursors.length;
  return {
    after: cursors[cursors.length - 1],
    page,
    hasPrevious: page > 1,
    next: useCallback((endCursor: string | null | undefined) => endCursor && setCursors((list) => [...list, endCursor]), []),
    previous: useCallback(() => setCursors((list) => (list.length > 1 ? list.slice(0, -1) : list)), []),
    reset: useCallback(() => setCursors([null]), []),
  };
}
