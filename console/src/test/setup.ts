import '@testing-library/jest-dom/vitest';
import { cleanup, configure } from '@testing-library/react';
import { afterEach } from 'vitest';

// findBy*/waitFor give up after 1 s by default; a jsdom render under the full suite's load can take longer. They
// return as soon as what they wait for is there, so a generous wait costs nothing when the machine is quiet.
configure({ asyncUtilTimeout: 10_000 });

// Components render through test/render.tsx, whose MantineProvider has env="test" (no portals, transitions not
// rendered), and jsdom reports reduced motion (below), so no transition timer fires after jsdom was torn down
// ("window is not defined").
afterEach(cleanup);

// jsdom lacks what Mantine measures with.
Object.defineProperty(window, 'matchMedia', {
  writable: true,
  value: (query: string) => ({
    // As in a browser, the empty query matches (mantine-datatable shows a cell when its column has no media query).
    // Reduced motion too: the theme respects it, so every Mantine transition takes 0 ms and leaves no timer behind
    // (env="test" skips their rendering, not the timers of their state changes).
    matches: query.trim() === '' || query.replace(/\s/g, '') === '(prefers-reduced-motion:reduce)',
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false,
  }),
});
window.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
};
window.HTMLElement.prototype.scrollIntoView ??= () => {};
