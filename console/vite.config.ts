import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `pnpm dev` (console) proxies API calls to the server on PORT (default 4000).
const api = `http://localhost:${process.env.PORT ?? 4000}`;
export default defineConfig({
  plugins: [react()],
  server: { proxy: { '/api': api, '/.well-known': api, '/healthz': api, '/readyz': api, '^/portal/[^/]+/graphql': api } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    rolldownOptions: {
      // The console, and the customer portal the server serves at /portal/<handle> (src/portal).
      input: { console: 'index.html', portal: 'portal.html' },
      output: {
        // Libraries change less often than the app: separate chunks stay cached across console releases.
        manualChunks(id: string) {
          if (!id.includes('node_modules')) return undefined;
          if (/chart\.js|react-chartjs-2/.test(id)) return 'charts';
          if (/@mantine|@tabler|@floating-ui/.test(id)) return 'ui';
          return 'vendor';
        },
      },
    },
  },
});
