import type { Database } from '../db/database.js';
import type { ServerSecrets } from '../crypto/secrets.js';
import type { TokenSigner } from './signing/signing-keys.js';

/** What every service function receives: its dependencies and the time, never process.env. */
export interface ServiceContext {
  db: Database;
  secrets: ServerSecrets;
  now: Date;
}

/** Public licensing calls also sign tokens and charge the tenant's request quota. */
export interface LicensingContext extends ServiceContext {
  signer: TokenSigner;
  issuer: string;
  /** Throws AppError('RateLimited') when the license, then the tenant, is over its per-minute limit. */
  chargeTenant(tenantId: string, licenseId: string): Promise<void>;
}
