import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { issueNonce } from '../../services/licenses/nonces.js';
import { commonErrors, json, noCredential } from './schemas.js';

const route = createRoute({
  method: 'get',
  path: '/nonce',
  operationId: 'getNonce',
  security: noCredential,
  tags: ['Licensing'],
  summary: 'Get a single-use activation nonce',
  description: 'No credential. The nonce is valid for 5 minutes and can be used by one activation. Fetch a fresh one immediately before each activation; never cache it across launches.',
  responses: {
    200: json(z.object({ nonce: z.string().openapi({ example: 'n4bQgWq3Zx8m0vYk2T1sRr6pL9dE5fHc' }) }).openapi('Nonce'), 'A fresh nonce.'),
    429: commonErrors[429],
    503: commonErrors[503],
  },
});

export const nonce = (deps: AppDeps) =>
  publicRoute(route, async () => ({ body: await issueNonce({ db: deps.db, now: deps.clock() }), headers: { 'Cache-Control': 'no-store' } }));
