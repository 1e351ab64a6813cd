import { defineConfig } from 'vite';

// `pnpm dev` (console) proxies API calls to the server on PORT (default 4000).
const api = `http://localhost:${process.env.PORT ?? 4000}`;
export default defineConfig({
  server: { proxy: { '/api': api, '/.well-known': api, '/healthz': api, '/readyz': api } },
});
