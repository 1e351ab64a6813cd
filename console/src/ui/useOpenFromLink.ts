import { useEffect } from 'react';
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
  useEffect(() => {
    if (!asked) return;
    open();
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        next.delete(NEW_PARAM);
        return next;
      },
      { replace: true },
    );
  }, [asked, open, setParams]);
}
