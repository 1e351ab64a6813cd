import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { validateLicense } from '../../services/licenses/validate.js';
import { licensingContext } from './context.js';
import { DeviceId, LicenseKey, RejectionCode, Version, commonErrors, json, jsonBody, noCredential } from './schemas.js';

const ValidateRequest = z
  .object({
    licenseKey: LicenseKey,
    version: Version.optional().openapi({ description: 'Running app version; checked against minVersion/maxVersion. Omit to skip the check.' }),
    deviceId: DeviceId.optional().openapi({ description: 'Optional: bound into the offline token as `device`. Alone it checks nothing about the device; see `requireActivation`.' }),
    requireActivation: z
      .boolean()
      .optional()
      .openapi({ description: 'Opt-in device-scoped check (default false: entitlement only). With `deviceId`, which it requires: a device that holds no active activation of the license (never activated, or deactivated since) answers `isValid: false`, `errorCode: DeviceNotActivated`; a valid answer\'s offlineCacheToken then carries `deviceActivated: true` next to `device`, and the activation\'s lastSeenAt is kept current (written at most every 5 minutes).' }),
    challenge: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .openapi({ description: 'Optional client challenge (random per request), echoed inside offlineCacheToken as its `nonce` claim so a captured response cannot be replayed. Not the server nonce of activate.' }),
    nonce: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .openapi({ deprecated: true, description: 'Deprecated: the former name of `challenge`, still accepted. Sending both with different values is refused (400 InvalidRequest).' }),
  })
  .refine((body) => !body.requireActivation || body.deviceId !== undefined, {
    message: 'requireActivation needs the deviceId of this machine.',
    path: ['deviceId'],
  })
  .refine((body) => body.challenge === undefined || body.nonce === undefined || body.challenge === body.nonce, {
    message: 'Send challenge only (nonce is its deprecated name), not both with different values.',
    path: ['nonce'],
  })
  .openapi('ValidateRequest');

const date = z.string().nullable().openapi({ format: 'date-time' });
const ValidateResponse = z
  .object({
    isValid: z.boolean(),
    message: z.string().optional().openapi({ description: 'Reason of invalidity; present only when isValid is false.' }),
    errorCode: z.union([RejectionCode, z.null()]).openapi({ description: 'Null when isValid is true.' }),
    productName: z.string().optional(),
    remainingActivations: z.number().int().optional(),
    expiresAt: date.optional().openapi({ description: 'Null: perpetual.' }),
    customFields: z.record(z.string(), z.string()).nullable().optional(),
    features: z.array(z.string()).optional(),
    isTrial: z.boolean().optional(),
    trialDaysRemaining: z.number().int().nullable().optional().openapi({ description: 'Present only when isTrial is true.' }),
    nodeLocked: z.boolean().optional(),
    offlineGraceDays: z.number().int().nullable().optional(),
    vendorWarning: z.string().nullable().optional().openapi({ description: 'Show it to the user when non-null: the vendor\'s own subscription is ending or has ended.' }),
    minVersion: z.string().nullable().optional(),
    maxVersion: z.string().nullable().optional(),
    bundleProducts: z.array(z.string()).nullable().optional().openapi({ description: 'Member products when the license is for a bundle; null otherwise.' }),
    isInGracePeriod: z.boolean().nullable().optional().openapi({ description: 'True when expired but within the grace period (isValid stays false); null when the license has no expiry or no grace period.' }),
    maintenanceExpiresAt: date.optional().openapi({ description: 'Update-policy metadata; never makes the license invalid.' }),
    offlineCacheToken: z.string().nullable().optional().openapi({ description: 'EdDSA-signed JWS (compact JWT) of the entitlement; verify with /.well-known/jwks.json. Null when invalid.' }),
  })
  .openapi('ValidateResponse');

const route = createRoute({
  method: 'post',
  path: '/validate',
  operationId: 'validateLicense',
  security: noCredential,
  tags: ['Licensing'],
  summary: 'Validate a license key',
  description: 'Checks entitlement on every app launch; increments no counter. Unknown, revoked, suspended (errorCode Suspended: the vendor paused the license; reinstating restores it), expired or otherwise invalid keys answer HTTP 200 with `isValid: false`, `message` and `errorCode`: grant access only when `isValid` is true. By default validation does not prove that the calling machine holds a seat (send `requireActivation: true` with `deviceId` for that: `DeviceNotActivated`); check that `productName`/`bundleProducts` and `features` belong to your application.',
  request: jsonBody(ValidateRequest),
  responses: {
    200: json(ValidateResponse, 'The entitlement result (valid or not).'),
    ...commonErrors,
  },
});

export const validate = (deps: AppDeps) =>
  publicRoute(route, async (call) => {
    const { challenge, nonce, ...body } = call.body;
    // The service names the client challenge `nonce` after the offline token's claim.
    return { body: await validateLicense(licensingContext(deps), { ...body, nonce: challenge ?? nonce }) };
  });
