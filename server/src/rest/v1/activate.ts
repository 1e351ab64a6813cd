import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { activateLicense } from '../../services/licenses/activations.js';
import { licensingContext } from './context.js';
import { DeviceId, ErrorResponse, LicenseKey, ProductName, Rejection, Version, commonErrors, json, jsonBody, noCredential } from './schemas.js';

const ActivateRequest = z
  .object({
    licenseKey: LicenseKey,
    nonce: z.string().min(1).max(256).optional().openapi({ description: 'Required: a fresh value from GET /api/v1/nonce. Missing → 400 NonceRequired; invalid, expired or used → 422 NonceInvalid.' }),
    deviceId: DeviceId.optional().openapi({ description: 'Required for node-locked licenses. Re-activating with the same deviceId reuses its seat, which makes retries safe.' }),
    deviceName: z.string().min(1).max(200).optional().openapi({ description: 'Human-readable device label shown in the admin console.', example: 'Ada’s MacBook Pro' }),
    version: Version.optional(),
    userEmail: z.email().max(320).optional().openapi({ description: 'End-user email; stored for a named-user audit trail and used for customer expiry notices when the license has no customer email yet.' }),
    product: z
      .union([ProductName, z.array(ProductName).min(1).max(16)])
      .optional()
      .openapi({
        description:
          'The product name(s) the application is for, as the vendor named the product (exact match). When sent, a license of another product — not a bundle containing one of them — is refused with `ProductMismatch` before any seat is taken (the nonce is spent, as by every rejection). The same rule the SDK applies to the offline token (`WrongProduct`).',
        example: 'Acme Studio',
      }),
  })
  .openapi('ActivateRequest');

const ActivateSuccess = z
  .object({
    isValid: z.literal(true),
    productName: z.string(),
    remainingActivations: z.number().int(),
    expiresAt: z.string().nullable().openapi({ format: 'date-time' }),
    features: z.array(z.string()),
    isTrial: z.boolean(),
    trialDaysRemaining: z.number().int().nullable().optional().openapi({ description: 'Present only for trials.' }),
    nodeLocked: z.boolean(),
    offlineGraceDays: z.number().int().nullable(),
    vendorWarning: z.string().nullable(),
  })
  .openapi('ActivateSuccess');

const route = createRoute({
  method: 'post',
  path: '/activate',
  operationId: 'activateLicense',
  security: noCredential,
  tags: ['Licensing'],
  summary: 'Activate a license on a device',
  description: 'Registers an installation and takes a seat atomically (concurrent activations never exceed maxActivations). A rejection (unknown, revoked, suspended (Suspended), expired, version, node-locked without deviceId, another product than `product` (ProductMismatch), SeatsExhausted) is HTTP 200 with `isValid: false`. After an uncertain timeout the activation may have committed: retry with a new nonce and the same deviceId.',
  request: jsonBody(ActivateRequest),
  responses: {
    200: json(z.union([ActivateSuccess, Rejection]), 'Activated, or rejected with an errorCode.'),
    ...commonErrors,
    422: json(ErrorResponse, 'The nonce is invalid, expired or already used (`NonceInvalid`).'),
  },
});

export const activate = (deps: AppDeps) =>
  publicRoute(route, async ({ body, clientIp }) => ({ body: await activateLicense(licensingContext(deps), { ...body, ip: clientIp }) }));
