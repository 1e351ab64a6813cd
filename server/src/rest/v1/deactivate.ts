import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { deactivateDevice } from '../../services/licenses/activations.js';
import { licensingContext } from './context.js';
import { DeviceId, LicenseKey, RejectionCode, commonErrors, json, jsonBody, noCredential } from './schemas.js';

const DeactivateRequest = z.object({ licenseKey: LicenseKey, deviceId: DeviceId }).openapi('DeactivateRequest');
const DeactivateResponse = z
  .union([
    z.object({ deactivated: z.literal(true), remainingActivations: z.number().int() }),
    z.object({ deactivated: z.literal(false), message: z.string(), errorCode: RejectionCode }),
  ])
  .openapi('DeactivateResponse');

const route = createRoute({
  method: 'post',
  path: '/deactivate',
  operationId: 'deactivateLicense',
  security: noCredential,
  tags: ['Licensing'],
  summary: 'Release the seat held by a device',
  description: 'Self-service release (for example before reinstalling on a new machine): frees the seat of the active installation with this deviceId. Unknown key or device: HTTP 200 with `deactivated: false` and errorCode LicenseNotFound or ActivationNotFound.',
  request: jsonBody(DeactivateRequest),
  responses: { 200: json(DeactivateResponse, 'Released, or nothing to release.'), ...commonErrors },
});

export const deactivate = (deps: AppDeps) => publicRoute(route, async ({ body }) => ({ body: await deactivateDevice(licensingContext(deps), body) }));
