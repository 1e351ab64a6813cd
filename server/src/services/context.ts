import type { JWTPayload } from 'jose';
import type { ServerSecrets } from '../crypto/secrets.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { LicenseCache } from './licenses/license-cache.js';
import type { ActorContext, RequestMeta, ServiceActor } from './auth/actor.js';

// The contexts services receive, named once (docs/architecture.md). A service called on someone's behalf takes
// a ServiceContext and authorizes its `actor`; a service the server calls for itself (jobs, sweeps, deliveries,
// sign-in before anyone is signed in) takes a SystemContext or SecretsContext, which carry no actor at all, so it
// cannot be handed a caller to trust by mistake.

/**
 * What every service function called for a caller receives: its dependencies, the time (never process.env, never
 * the wall clock), who is calling and from where. Services authorize `actor` themselves (auth/actor.ts
 * `require…`); a GraphQL scope is only a second line. `actor` is null for an anonymous call (sign-in, setup,
 * accepting an invitation).
 */
export interface ServiceContext {
  db: Database;
  secrets: ServerSecrets;
  now: Date;
  actor: ServiceActor | null;
  meta: RequestMeta;
}

/** What an authorization check (auth/actor.ts `require…`) reads. */
export type { ActorContext };

/** System-only work on the database at a time: no caller to authorize. */
export type SystemContext = Pick<ServiceContext, 'db' | 'now'>;

/** System-only work that also uses the server secret (digests, sealed columns, token signing, audit chains). */
export type SecretsContext = Pick<ServiceContext, 'db' | 'secrets' | 'now'>;

/** Signs tokens with the current signing key (signing/signing-keys.ts `loadTokenSigner`). */
export interface TokenSigner {
  kid: string;
  sign(claims: JWTPayload, times: { issuedAt: Date; expiresAt: Date }): Promise<string>;
  /** A compact JWS of exactly `payload` (nothing added: no `iss`, `iat` or `exp`), for statements that do not expire (release artifact signatures). */
  signPayload(payload: object): Promise<string>;
}

/**
 * Public licensing calls (a license key is the credential, so there is no actor): they also sign tokens and
 * charge the tenant's request quota.
 */
export interface LicensingContext extends SecretsContext {
  signer: TokenSigner;
  issuer: string;
  /** Throws AppError('RateLimited') when the license, then the tenant, is over its per-minute limit. */
  chargeTenant(tenantId: string, licenseId: string): Promise<void>;
  /** What validate reads, kept in memory (LICENSE_CACHE); absent: validate reads the database. */
  licenseCache?: LicenseCache;
}

/** The scheduled notification runs (expiry, digest): system-only, with the links their emails carry. */
export interface NotificationContext extends SystemContext {
  publicUrl: string;
  logger?: Logger;
  /** Tests only: called before each tenant of a scheduled run; a throw fails that tenant. */
  failpoint?: (job: string, tenantId: string) => void | Promise<void>;
}
