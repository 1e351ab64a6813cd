import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { isUuid } from '../listing.js';
import { tauriSignatureProblem } from './feeds.js';

/**
 * Sets (or, with null, removes) the vendor's Tauri updater signature of an artifact (CompanyAdmin): the content of
 * the minisign `.sig` file `tauri build` wrote beside the bundle. The Tauri feed offers only artifacts that have one
 * (docs/integrate/update-feeds.md "The Tauri signature"). Allowed on a published release too: the signature is the
 * vendor's statement about bytes Keyforge already holds, and Tauri checks it against them. Audited
 * (SetArtifactTauriSignature).
 */
export async function setArtifactTauriSignature(ctx: ServiceContext, artifactId: string, tauriSignature: string | null) {
  const { tenantId } = requireAdmin(ctx);
  const notFound = () => new AppError('NotFound', 'Artifact not found.', { fields: { artifactId: 'not found' } });
  if (!isUuid(artifactId)) throw notFound();
  const signature = tauriSignature === null ? null : tauriSignature.trim();
  if (signature !== null) {
    const problem = tauriSignatureProblem(signature);
    if (problem) throw new AppError('InvalidRequest', `tauriSignature ${problem}.`, { fields: { tauriSignature: problem } });
  }
  return ctx.db.prisma.$transaction(async (tx) => {
    const found = await tx.releaseArtifact.findFirst({
      where: { id: artifactId, tenantId },
      select: { id: true, releaseId: true, filename: true, release: { select: { status: true, version: true, product: { select: { name: true } } } } },
    });
    if (!found) throw notFound();
    if (found.release.status === 'yanked') throw new AppError('Conflict', 'The release is yanked: its artifacts are no longer offered.');
    const updated = await tx.releaseArtifact.update({ where: { id: found.id }, data: { tauriSignature: signature }, select: { id: true, tauriSignature: true } });
    await recordAudit(
      tx,
      { tenantId, action: 'SetArtifactTauriSignature', entityType: 'Release', entityId: found.releaseId, entity: `${found.release.product.name} ${found.release.version}`, details: { filename: found.filename, tauriSignature: signature === null ? 'removed' : 'set' } },
      auditActor(ctx),
      ctx.now,
    );
    return updated;
  });
}
