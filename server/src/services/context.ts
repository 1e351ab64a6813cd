import type { Database } from '../db/database.js';
import type { ServerSecrets } from '../crypto/secrets.js';
import type { RequestMeta, ServiceActor } from './auth/actor.js';
import type { TokenSigner } from './signing/signing-keys.js';

/**
 * What every service function receives: its dependencies, the time (never process.env, never the wall clock),
 * who is calling and from where. Services authorize `actor` themselves (auth/actor.ts `require…`); a GraphQL
 * scope is only a second line. `actor` is null for an anonymous call (sign-in, setup, accepting an invitation).
 */
export interface ServiceContext {
  db: Database;
  secrets: ServerSecrets;
  now: Date;
  actor: ServiceActor | null;
  meta: RequestMeta;
}

/**
 * Public licensing calls (a license key is the credential, so there is no actor): they also sign tokens and
 * charge the tenant's request quota.
 */
export interface LicensingContext extends Pick<ServiceContext, 'db' | 'secrets' | 'now'> {
  signer: TokenSigner;
  issuer: string;
  /** Throws AppError('RateLimited') when the license, then the tenant, is over its per-minute limit. */
  chargeTenant(tenantId: string, licenseId: string): Promise<void>;
}
