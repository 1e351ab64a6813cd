import { Table } from '@mantine/core';
import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A table that scrolls sideways on a tablet and becomes a stack of cards on a phone (styles.css,
 * `.cards-on-phone`): each cell is labelled with its column's header, copied from the table head.
 */
export function ResponsiveTable({ minWidth, children }: { minWidth: number; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const root = ref.current;
    if (!root) return;
    const label = () => {
      for (const table of root.querySelectorAll('table')) {
        const headers = [...table.querySelectorAll('thead th')].map((th) => th.textContent?.trim() ?? '');
        for (const row of table.querySelectorAll('tbody tr')) {
          [...row.children].forEach((cell, index) => {
            const header = headers[index];
            if (header && cell.getAttribute('data-label') !== header) cell.setAttribute('data-label', header);
          });
        }
      }
    };
    label();
    // Rows come and go with paging and refetches (attribute changes do not trigger this again).
    const observer = new MutationObserver(label);
    observer.observe(root, { childList: true, subtree: true, characterData: true });
    return () => observer.disconnect();
  }, []);
  return (
    <div ref={ref} className="cards-on-phone">
      <Table.ScrollContainer minWidth={minWidth}>{children}</Table.ScrollContainer>
    </div>
  );
}
