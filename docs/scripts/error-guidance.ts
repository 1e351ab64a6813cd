/**
 * What each error code means and what an application (or a management-API client) should show or do: the
 * hand-written half of docs/reference/errors.md. The codes themselves come from the code's own lists
 * (docs/scripts/error-reference.ts); a code without an entry here fails the generator, and so does an entry whose
 * code no list has any more. Keyed by code: a code that several lists share (a rejection code the SDK throws as a
 * `LicenseRejectedError`, an HTTP error code that is also a GraphQL `extensions.code`) has one meaning.
 */
export interface Guidance {
  /** When it happens, in one or two sentences. */
  means: string;
  /** What the application should show the user, or do. */
  action: string;
}

export const ERROR_GUIDANCE: Record<string, Guidance> = {
  // Rejections: HTTP 200 with `isValid: false` (REST), thrown as LicenseRejectedError by the SDK.
  LicenseNotFound: {
    means: 'No license has this key: mistyped, from another Keyforge installation, or a malformed key. Every key answering it at once after a restore or a move means the server runs with another `SERVER_SECRET`.',
    action: 'Show "This license key is not valid: check it and try again" and let the user re-enter it. Do not retry the same key.',
  },
  LicenseRevoked: {
    means: 'The vendor revoked the license (refund, chargeback, abuse). Final: a revoked license never works again.',
    action: 'Stop granting access; show "This license has been revoked" with the vendor\'s support contact. Delete the stored offline token.',
  },
  Suspended: {
    means: 'The vendor suspended the license (a failed payment, a dispute). Temporary: the seats are kept and it works again once the vendor reinstates it.',
    action: 'Show "This license is suspended: contact the vendor" and keep the installation as it is; validate again later (the next launch).',
  },
  LicenseExpired: {
    means: 'The license\'s `expiresAt` has passed. `isInGracePeriod` is `true` while the license\'s grace period (`gracePeriodDays`) runs.',
    action: 'Show that the license expired and offer renewal (the vendor\'s store or customer portal). While `isInGracePeriod` is `true` the application may keep working with a warning; once it is `false`, stop.',
  },
  SeatsExhausted: {
    means: 'Activate: every one of the license\'s `maxActivations` seats is taken by other devices. No seat was taken.',
    action: 'Say how many devices the license allows and that they are all in use; offer to free one (the customer portal, or `deactivate` on the old device) or to buy more seats.',
  },
  VersionNotSupported: {
    means: 'The `version` sent is outside the license\'s `minVersion`/`maxVersion` (e.g. a major upgrade the license does not cover).',
    action: 'Tell the user which versions the license covers (the answer carries `minVersion`/`maxVersion`) and offer an upgrade of the license or the covered version.',
  },
  DeviceIdRequired: {
    means: 'Activate: the license is node-locked and no `deviceId` was sent.',
    action: 'A bug in the integration: always send a stable `deviceId` (the SDK\'s `machineFingerprint()`) with activate.',
  },
  ProductMismatch: {
    means: 'Activate or floating checkout with `product`: the key is for another product (and not a bundle containing one of those named). No seat was taken.',
    action: 'Show "This key is for another product" and let the user enter the key for this application.',
  },
  ActivationNotFound: {
    means: 'Deactivate: this license has no active installation with that `deviceId` (already deactivated, or never activated here).',
    action: 'Treat as done: the seat is free. Delete the local activation state.',
  },
  DeviceNotActivated: {
    means: 'Validate with `requireActivation`: this `deviceId` holds no active activation of the license (never activated, or the vendor or the customer removed it).',
    action: 'Ask the user to activate again (a new activation takes a seat if one is free); do not grant access meanwhile.',
  },
  FloatingNotEnabled: {
    means: 'Floating checkout or heartbeat: the license has no floating pool (`floatingSeats` is not set).',
    action: 'Use activate/validate for this license, or ask the vendor for a floating license.',
  },
  FloatingSeatsExhausted: {
    means: 'Checkout: every floating seat is in use by other running sessions.',
    action: 'Show "All N seats are in use" and offer to retry later (a seat frees itself when a session checks in or its lease lapses).',
  },
  SessionInvalid: {
    means: 'Heartbeat or check-in: the session token is unknown or malformed.',
    action: 'Drop the session and check out again.',
  },
  SessionExpired: {
    means: 'Heartbeat: the floating session was checked in, replaced, ended by the vendor, or its lease lapsed (no heartbeat for a whole lease).',
    action: 'Stop the licensed work (save the user\'s data first) and check out again; if that fails with `FloatingSeatsExhausted`, tell the user.',
  },
  QuotaExceeded: {
    means: 'Meter: recording this quantity would take the period\'s total over the license\'s quota. Nothing was recorded; the answer carries `total`, `limit`, `remaining` and the period.',
    action: 'Refuse the metered action and show the remaining quota and when the period ends (`periodEnd`); offer a larger plan.',
  },

  // HTTP errors (REST `{ "error": { "code" } }`) and GraphQL `extensions.code`.
  InvalidRequest: {
    means: 'The request is malformed: bad JSON, a wrong `Content-Type`, a body over the size limit, a missing or invalid field (`fields` names each one), a license key in the URL. In GraphQL also an invalid query or one over the cost or depth limits.',
    action: 'A bug in the caller or input the user can correct: show the `fields` messages on the form\'s inputs; do not retry unchanged.',
  },
  NonceRequired: {
    means: 'Activate without a `nonce`.',
    action: 'A bug in the integration: fetch `GET /api/v1/nonce` immediately before every activation.',
  },
  NonceInvalid: {
    means: 'The nonce is unknown, expired (five minutes) or already used (a nonce serves one activation attempt, accepted or rejected).',
    action: 'Fetch a new nonce and send the activation again (the same `deviceId`: the seat is reused, never taken twice).',
  },
  Unauthorized: {
    means: 'Management API: no credential, or an invalid, expired or revoked one (session, API key); a wrong password at sign-in.',
    action: 'Sign in again (the console refreshes its session first); for an API key, check that it exists and is not revoked.',
  },
  Forbidden: {
    means: 'Management API: the caller is signed in but its role or the API key\'s scopes do not allow this action.',
    action: 'Show "You do not have permission"; an admin can change the role or create a key with the scope.',
  },
  ReauthenticationRequired: {
    means: 'An account-security action (API keys, MFA, password, webhook endpoints, admin roles, audit export, key reissue) from a session that has not confirmed its password recently.',
    action: 'Ask for the password (and a TOTP or backup code when MFA is on), call `reauthenticate`, then repeat the action.',
  },
  NotFound: {
    means: 'The object does not exist, or belongs to another company (another tenant\'s object answers the same, never "forbidden").',
    action: 'Show "not found" and refresh the list it came from; it may have been deleted.',
  },
  Conflict: {
    means: 'The change collides with the current state: a name or prefix already used, a license in a state that does not allow the action.',
    action: 'Show the message (it names the conflict); reload the object and let the user decide.',
  },
  AccountLocked: {
    means: 'Sign-in: too many failed attempts locked the account for a while.',
    action: 'Show the message (it says when to try again) and offer the password reset link.',
  },
  RateLimited: {
    means: 'HTTP 429: a rate limit was exceeded — per IP, per company, or a sign-in limit (per address and per account; also when more password checks of one account run at once than its lockout allows, so a right password is never counted as a failure). `Retry-After` (and `extensions.retryAfterSeconds` in GraphQL) says how many seconds to wait.',
    action: 'Wait `Retry-After` seconds, then retry a bounded number of times. Many at once from one address behind a proxy: see Troubleshooting (`TRUST_PROXY`).',
  },
  ServiceUnavailable: {
    means: 'HTTP 503: the database is unreachable for a moment (a restart, a failover).',
    action: 'Retry with backoff, honouring `Retry-After`; an application falls back to its verified offline token meanwhile.',
  },
  InternalError: {
    means: 'HTTP 500: a bug on the server. The message quotes the request id, which is also in the server log.',
    action: 'Show a generic error with the request id; report it to the operator. Retrying may not help.',
  },

  // GraphQL documents refused by graphql-yoga before they run (server/src/graphql/request-errors.ts).
  GRAPHQL_PARSE_FAILED: {
    means: 'The GraphQL document is not valid GraphQL syntax.',
    action: 'A bug in the caller: fix the query (the message gives the position).',
  },
  GRAPHQL_VALIDATION_FAILED: {
    means: 'The document does not fit the schema: an unknown field or argument, a wrong type, a missing required argument. Also a field removed after its deprecation window ([Versioning](/reference/versioning)).',
    action: 'A bug in the caller: check the query against the [GraphQL reference](/reference/graphql/) and `server/schema.graphql` of your version.',
  },

  // TypeScript SDK errors only (sdk/src/errors.ts).
  InvalidResponse: {
    means: 'SDK: the answer was not the API\'s JSON (a proxy\'s error page, a wrong `baseUrl`).',
    action: 'Check `baseUrl` (the server\'s origin, without /api/v1) and what answers there.',
  },
  NetworkError: {
    means: 'SDK: no answer after the retries (DNS, refused connection, TLS, offline).',
    action: 'Fall back to `validateOffline` (or pass `offlineFallback: true`); tell the user the license server cannot be reached only when that fails too.',
  },
  Timeout: {
    means: 'SDK: no answer within `timeoutMs` on every attempt.',
    action: 'As for `NetworkError`. An activation that timed out may have committed: retry with the same `deviceId` (the SDK does).',
  },
  TokenMissing: {
    means: 'SDK: no offline token (validate answered without one, or nothing is stored for this license yet).',
    action: 'Validate online once to store a token; until then the application cannot run offline.',
  },
  TokenInvalid: {
    means: 'SDK: the offline token\'s signature, algorithm or format is wrong: tampered with, or not from this server.',
    action: 'Do not grant access from it; validate online (which replaces the stored token).',
  },
  TokenExpired: {
    means: 'SDK: the offline token is past its `exp`: the offline grace period is over.',
    action: 'Tell the user to connect to the internet so the license can be checked; validate online.',
  },
  KeyUnknown: {
    means: 'SDK: the token is signed by a key the client does not trust (not pinned, not in the fetched JWKS): the server rotated its signing key and the pinned JWKS is old, or the token is not from this server.',
    action: 'Ship the current JWKS with the application (or leave `jwks` unset so the SDK fetches them); validate online.',
  },
  WrongIssuer: {
    means: 'SDK: the token\'s `iss` is not the expected issuer. The SDK expects `issuer` (default: `baseUrl`); the server signs with its `PUBLIC_URL`.',
    action: 'Make `baseUrl` (or the `issuer` option) equal the server\'s `PUBLIC_URL` exactly (scheme, host, port). See Troubleshooting.',
  },
  WrongProduct: {
    means: 'SDK: the offline token is for another product than the client\'s `product` (and not a bundle containing it).',
    action: 'As `ProductMismatch`: the stored license is for another application; ask for this application\'s key.',
  },
  WrongDevice: {
    means: 'SDK: the token is bound to another device, or to none while a device was asked for (or, with `requireActivation`, it does not attest the activation).',
    action: 'Validate online with this device\'s `deviceId` (and `requireActivation` when the check needs it).',
  },
  ChallengeMismatch: {
    means: 'SDK: the token does not echo this request\'s challenge: a replayed or substituted answer (a proxy caching POSTs, an attack).',
    action: 'Do not grant access; retry online. Repeated: something between the application and the server alters answers.',
  },
  ClockRollback: {
    means: 'SDK: the local clock is earlier than a time already seen (set back, perhaps to stretch the offline grace period).',
    action: 'Ask the user to correct the system clock, then validate online.',
  },
  OfflineNotAllowed: {
    means: 'SDK: the license allows no offline use (`offlineGraceDays` null or 0).',
    action: 'Require a connection: tell the user the license must be checked online.',
  },
  ArtifactIntegrity: {
    means: 'SDK: a downloaded release file did not check out: its signature is not this server\'s (tampered, an unknown key, another issuer or product, another artifact), or the bytes are not the signed size, SHA-256 and SHA-512. Nothing was returned and no file was left behind.',
    action: 'Do not install anything. Download again (a file cut short or altered in transit passes the second time); if it persists, the file or its listing was tampered with: report it to the vendor.',
  },
  LeaseLapsed: {
    means: 'SDK: a floating session got no heartbeat through for a whole lease, so the server has freed the seat.',
    action: 'Stop the licensed work (save first) and check out again when the connection is back.',
  },
  MachineIdUnavailable: {
    means: 'SDK: `machineFingerprint()` found no machine id on this platform (a container without /etc/machine-id, a sandbox).',
    action: 'Pass your own stable `deviceId`, or let the SDK use its installation id (leave `deviceId` out).',
  },
  UsageQueueFull: {
    means: 'SDK: 1,000 usage records already wait, offline, to be sent for this license.',
    action: 'Send them (`flushUsage`) once online; until then refuse further metered work or record it yourself.',
  },
  FileWriteFailed: {
    means: 'SDK: a release download to a file could not be written: the folder does not exist or is not writable, or the disk is full. Not retried (the network is not at fault); the temporary file was deleted and the destination left as it was.',
    action: 'Tell the user the update could not be saved and why (the message names the folder); free space or choose another folder, then download again.',
  },
};
