import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { licenseFileForKey } from '../../services/license-files/index.js';
import { licensingContext } from './context.js';
import { DeviceId, LicenseKey, Rejection, commonErrors, json, jsonBody, noCredential } from './schemas.js';

const LicenseFileRequest = z
  .object({
    licenseKey: LicenseKey,
    deviceId: DeviceId.optional().openapi({ description: 'A device file, bound to this device, which must hold an active activation of the license (else DeviceNotActivated). Omitted: a file for the whole license.' }),
    encrypt: z.boolean().optional().openapi({ description: 'Encrypt the file under the license key (and the device id): it then reveals nothing without them. Default false.' }),
  })
  .openapi('LicenseFileRequest');

const LicenseFileResponse = z
  .union([
    z.object({
      isValid: z.literal(true),
      licenseFile: z.string().openapi({ description: 'The signed file, armored (`-----BEGIN KEYFORGE LICENSE FILE-----`, base64 in lines of 64): verify it with the SDK\'s `verifyLicenseFile`.' }),
      issuedAt: z.string().openapi({ format: 'date-time' }),
      expiresAt: z.string().openapi({ format: 'date-time', description: 'Issue time plus the product\'s license file ttl, never after the license expires.' }),
      deviceId: z.string().nullable(),
      encrypted: z.boolean(),
    }),
    Rejection,
  ])
  .openapi('LicenseFileResponse');

const route = createRoute({
  method: 'post',
  path: '/license-file',
  operationId: 'licenseFile',
  security: noCredential,
  tags: ['Licensing'],
  summary: 'A signed license file for offline use',
  description:
    'The application fetches a license file while it is online, to keep working offline until the file expires (docs/integrate/license-files.md). The key (and, for a device file, the device\'s activation) is the right to it. A license that is revoked, suspended or expired, an unknown key, or a device without activation: HTTP 200 with `isValid: false`.',
  request: jsonBody(LicenseFileRequest),
  responses: { 200: json(LicenseFileResponse, 'The file, or a rejection.'), ...commonErrors },
});

export const licenseFile = (deps: AppDeps) => publicRoute(route, async ({ body }) => ({ body: await licenseFileForKey(licensingContext(deps), body) }));
