import { useEffect } from 'react';

/** Refetches a query every second, from the network, until `done` (a background job's progress). */
export function usePollUntil(done: boolean, reload: (options: { requestPolicy: 'network-only' }) => void) {
  useEffect(() => {
    if (done) return;
    const timer = setInterval(() => reload({ requestPolicy: 'network-only' }), 1_000);
    return () => clearInterval(timer);
  }, [done, reload]);
}
