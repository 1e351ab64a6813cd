import type { ServiceContext, TokenSigner } from '../context.js';
import { auditActor, requireAdmin } from '../auth/actor.js';
import { issueLicenseFile, type IssueLicenseFileInput, type LicenseFileContext } from './license-file.js';
import { activateFromRequest, deactivateFromProof, type ActivateFromRequestInput, type DeactivateFromProofInput } from './offline-activation.js';

// Signed license files and air-gapped activation (docs/integrate/license-files.md). The core functions take the
// tenant and the actor the activity log names, so each door authorizes its own caller and then calls them: the
// staff wrappers below (GraphQL), the customer portal (a customer of the license, actor "customer <email>").

export { activateFromRequest, deactivateFromProof, parseActivationRequest, requestMac } from './offline-activation.js';
export { issueLicenseFile, licenseFileForKey, signLicenseFile, LICENSE_FILE_TTL_DAYS, type LicenseFileContext } from './license-file.js';
export { MAX_ARMORED_CHARS } from './armor.js';

/** A staff member's context (GraphQL): the service context and the token signer. */
export type StaffFileContext = ServiceContext & { signer: TokenSigner; issuer: string };

const asFileContext = (ctx: StaffFileContext): LicenseFileContext => ({ db: ctx.db, secrets: ctx.secrets, now: ctx.now, signer: ctx.signer, issuer: ctx.issuer });

/** A license file for a license of the caller's company (CompanyAdmin; logged as the caller). */
export function staffIssueLicenseFile(ctx: StaffFileContext, input: Omit<IssueLicenseFileInput, 'tenantId' | 'actor'>) {
  const { tenantId } = requireAdmin(ctx);
  return issueLicenseFile(asFileContext(ctx), { ...input, tenantId, actor: auditActor(ctx) });
}

/** Uploads an activation request for the caller's company (CompanyAdmin): the device license file in answer. */
export function staffActivateFromRequest(ctx: StaffFileContext, input: Omit<ActivateFromRequestInput, 'tenantId' | 'actor' | 'mayRebindDevice'>) {
  const { tenantId } = requireAdmin(ctx);
  return activateFromRequest(asFileContext(ctx), { ...input, tenantId, actor: auditActor(ctx), mayRebindDevice: true });
}

/** Uploads a deactivation proof for the caller's company (CompanyAdmin): frees the device it names. */
export function staffDeactivateFromProof(ctx: StaffFileContext, input: Omit<DeactivateFromProofInput, 'tenantId' | 'actor'>) {
  const { tenantId } = requireAdmin(ctx);
  return deactivateFromProof(asFileContext(ctx), { ...input, tenantId, actor: auditActor(ctx) });
}
