import '@testing-library/jest-dom/vitest';
import { cleanup } from '@testing-library/react';
import { afterAll, afterEach } from 'vitest';

afterEach(cleanup);
// Mantine's transitions finish on timers (a closing modal, ~200 ms). Let the last ones fire while jsdom's window still
// exists: after the file the environment is torn down, and a late state update throws "window is not defined".
afterAll(() => new Promise((resolve) => setTimeout(resolve, 500)));

// jsdom lacks what Mantine measures with.
Object.defineProperty(window, 'matchMedia', {
  writable: true,
  value: (query: string) => ({
    // As in a browser, the empty query matches (mantine-datatable shows a cell when its column has no media query).
    matches: query.trim() === '',
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
