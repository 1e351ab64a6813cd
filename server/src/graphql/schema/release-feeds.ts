import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import { setArtifactTauriSignature } from '../../services/releases/tauri-signature.js';

// The update feeds' part of release management (docs/integrate/update-feeds.md): the vendor's Tauri signature of an
// artifact. The resolver only hands over to services/releases.

const SetArtifactTauriSignatureInput = builder.inputType('SetArtifactTauriSignatureInput', {
  fields: (t) => ({
    artifactId: t.id({ required: true }),
    tauriSignature: t.string({
      description: "The content of the minisign .sig file `tauri build` wrote beside the bundle (one line of base64), made with the vendor's Tauri key; null removes it (the artifact is then not offered to Tauri).",
    }),
  }),
});

const SetArtifactTauriSignaturePayload = builder.objectRef<{ id: string; tauriSignature: string | null }>('SetArtifactTauriSignaturePayload').implement({
  fields: (t) => ({
    artifactId: t.exposeID('id'),
    tauriSignature: t.exposeString('tauriSignature', { nullable: true }),
  }),
});

builder.mutationFields((t) => ({
  setArtifactTauriSignature: t.field({
    type: SetArtifactTauriSignaturePayload,
    description:
      "Sets or removes an artifact's Tauri updater signature (CompanyAdmin). Tauri's feed offers only artifacts that have one. Text that is not a minisign signature: InvalidRequest; another company's artifact: NotFound; a yanked release: Conflict.",
    args: { input: t.arg({ type: SetArtifactTauriSignatureInput, required: true }) },
    resolve: (_root, { input }, ctx) => setArtifactTauriSignature(serviceCtx(ctx), String(input.artifactId), input.tauriSignature ?? null),
  }),
}));
