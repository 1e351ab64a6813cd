import { useEffect, useRef } from 'react';
import { useSearchParams } from 'react-router';

/** The query parameter by which a link opens a page's creation form (`/products?new=1`). */
export const NEW_PARAM = 'new';

/**
 * Opens a page's creation form when the address asks for it (`?new=1`, the onboarding checklist's links), then drops
 * the parameter from the address, so a reload or Back does not open it again.
 */
export function useOpenFromLink(open: () => void) {
  const [params, setParams] = useSearchParams();
  const asked = params.get(NEW_PARAM) === '1';
  // The latest `open` without being a dependency: a caller's inline function is new on every render, and re-running
  // the effect for it (before the address has dropped the parameter) would open the form again and again.
  const openLatest = useRef(open);
  openLatest.current = open;
  useEffect(() => {
    if (!asked) return;
    openLatest.current();
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        next.delete(NEW_PARAM);
        return next;
      },
      { replace: true },
    );
  }, [asked, setParams]);
}
