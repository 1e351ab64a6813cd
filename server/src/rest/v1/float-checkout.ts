import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { HEARTBEAT_INTERVAL_SECONDS, LEASE_SECONDS, checkoutFloatingSeat } from '../../services/floating/sessions.js';
import { licensingContext } from './context.js';
import { DeviceId, LicenseKey, ProductName, Rejection, Version, commonErrors, json, jsonBody, noCredential } from './schemas.js';

const CheckoutRequest = z
  .object({
    licenseKey: LicenseKey,
    deviceId: DeviceId.optional().openapi({ description: 'Optional. One seat per deviceId: a checkout with the deviceId of an active session replaces that session (its token stops working), so a retry after a timeout never takes a second seat. Several instances on one machine that each need a seat send distinct values (or none).' }),
    deviceName: z.string().min(1).max(200).optional().openapi({ description: 'Label shown to the vendor.', example: 'Ada’s MacBook Pro' }),
    version: Version.optional().openapi({ description: 'Optional: checked against minVersion/maxVersion like activate.' }),
    product: z
      .union([ProductName, z.array(ProductName).min(1).max(16)])
      .optional()
      .openapi({
        description: 'The product name(s) the application is for, exactly as activate takes them: a license of another product (not a bundle containing one of them) is refused with `ProductMismatch` and no seat is taken.',
        example: 'Acme Studio',
      }),
  })
  .openapi('FloatCheckoutRequest');

const CheckoutSuccess = z
  .object({
    isValid: z.literal(true),
    sessionToken: z.string().openapi({ description: 'Secret session credential (`kfs_` + 43 characters), returned only here. Send it to heartbeat and checkin in the JSON body or `Authorization: Bearer`, never in a URL.', example: 'kfs_Zm9yIGRvY3VtZW50YXRpb24gb25seSwgbm90IGEgdG9' }),
    sessionId: z.string().openapi({ description: 'Public id of the session (shown to the vendor); not a credential.' }),
    leaseExpiresAt: z.string().openapi({ format: 'date-time', description: `The seat is held until then unless renewed by a heartbeat (lease: ${LEASE_SECONDS} s).` }),
    leaseSeconds: z.number().int().openapi({ example: LEASE_SECONDS }),
    heartbeatIntervalSeconds: z.number().int().openapi({ description: 'Send a heartbeat this often.', example: HEARTBEAT_INTERVAL_SECONDS }),
    floatingSeats: z.number().int().openapi({ description: 'Pool size of the license.' }),
    remainingFloatingSeats: z.number().int().openapi({ description: 'Seats still free after this checkout.' }),
    productName: z.string(),
    expiresAt: z.string().nullable().openapi({ format: 'date-time', description: 'License expiry; null: perpetual.' }),
    features: z.array(z.string()),
    vendorWarning: z.string().nullable(),
  })
  .openapi('FloatCheckoutSuccess');

const route = createRoute({
  method: 'post',
  path: '/float/checkout',
  operationId: 'floatCheckout',
  security: noCredential,
  tags: ['Floating'],
  summary: 'Check out a floating (concurrent) seat',
  description: `Takes one seat of the license's floating pool for a lease of ${LEASE_SECONDS} s, renewed by heartbeats every ${HEARTBEAT_INTERVAL_SECONDS} s. Concurrent checkouts never exceed the pool. A full pool answers HTTP 200 with \`isValid: false\` and errorCode FloatingSeatsExhausted; a license without a pool FloatingNotEnabled; a key of another product than \`product\` ProductMismatch; also LicenseNotFound, LicenseRevoked, Suspended, LicenseExpired, VersionNotSupported.`,
  request: jsonBody(CheckoutRequest),
  responses: { 200: json(z.union([CheckoutSuccess, Rejection]), 'A session, or a rejection with an errorCode.'), ...commonErrors },
});

export const floatCheckout = (deps: AppDeps) =>
  publicRoute(route, async ({ body, clientIp }) => ({
    body: await checkoutFloatingSeat(licensingContext(deps), { ...body, ip: clientIp }),
    // The answer carries the session token: no cache may keep it.
    headers: { 'Cache-Control': 'no-store' },
  }));
