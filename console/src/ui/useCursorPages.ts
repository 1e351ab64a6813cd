import { useCallback, useState } from 'react';

/**
 * "Load more" state for a `first/after` connection whose pages graphcache's relayPagination merges into one
 * list: the cursor of the last page asked for. It starts over whenever `resetKey` (the filters) changes.
 */
export function useCursorPages(resetKey = '') {
  const [state, setState] = useState<{ key: string; after: string | null }>({ key: resetKey, after: null });
  const after = state.key === resetKey ? state.after : null;
  return {
    after,
    loadMore: useCallback((endCursor: string) => setState({ key: resetKey, after: endCursor }), [resetKey]),
    reset: useCallback(() => setState({ key: resetKey, after: null }), [resetKey]),
  };
}
