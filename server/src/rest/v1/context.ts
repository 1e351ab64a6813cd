import type { AppDeps } from '../../deps.js';
import type { LicensingContext } from '../../services/context.js';

/** The service context of one public request: shared dependencies, the request's clock reading, the tenant quota. */
export function licensingContext(deps: AppDeps): LicensingContext {
  return {
    db: deps.db,
    secrets: deps.secrets,
    signer: deps.signer,
    issuer: deps.config.publicUrl,
    now: deps.clock(),
    licenseCache: deps.licenseCache,
    chargeTenant: async (tenantId, licenseId) => {
      // The license first: one customer's key over its own limit must not spend the tenant's budget.
      await deps.rateLimits.perLicense(licenseId);
      await deps.rateLimits.perTenant(tenantId);
    },
  };
}
