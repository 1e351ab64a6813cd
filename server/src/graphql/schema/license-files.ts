import { builder } from '../builder.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { getLicense } from '../../services/licenses/management.js';
import {
  LICENSE_FILE_TTL_DAYS,
  staffActivateFromRequest,
  staffDeactivateFromProof,
  staffIssueLicenseFile,
  type StaffFileContext,
} from '../../services/license-files/index.js';
import { LicenseType } from './licenses.js';

// Signed license files and air-gapped activation for staff (docs/integrate/license-files.md): the resolvers only
// authorize (CompanyAdmin, in the services' staff wrappers) and hand over to services/license-files.

const fileCtx = (ctx: GraphQLContext): StaffFileContext => ({ ...serviceCtx(ctx), signer: ctx.deps.signer, issuer: ctx.deps.config.publicUrl });

const IssueLicenseFileInput = builder.inputType('IssueLicenseFileInput', {
  fields: (t) => ({
    licenseId: t.id({ required: true }),
    deviceId: t.string({ description: 'A device file, bound to this device: it must hold an active activation of the license. Omitted: a file for the whole license.' }),
    ttlDays: t.int({ description: `Days the file stays valid (${LICENSE_FILE_TTL_DAYS.min}–${LICENSE_FILE_TTL_DAYS.max}); never past the license's expiry. Omitted: the product's licenseFileTtlDays.` }),
    licenseKey: t.string({ description: "Encrypts the file under this key (it must be the license's): the file then reveals nothing without it. The server never stores keys." }),
  }),
});

const IssueLicenseFilePayload = builder
  .objectRef<{ licenseFile: string; issuedAt: Date; expiresAt: Date; deviceId: string | null; encrypted: boolean }>('IssueLicenseFilePayload')
  .implement({
    fields: (t) => ({
      licenseFile: t.exposeString('licenseFile', { description: 'The signed file, armored (-----BEGIN KEYFORGE LICENSE FILE-----): save it as a .lic file or paste it.' }),
      issuedAt: t.expose('issuedAt', { type: 'DateTime' }),
      expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'When the SDK stops accepting it.' }),
      deviceId: t.exposeString('deviceId', { nullable: true }),
      encrypted: t.exposeBoolean('encrypted'),
    }),
  });

const ActivateOfflineInput = builder.inputType('ActivateOfflineInput', {
  fields: (t) => ({
    licenseId: t.id({ required: true, description: 'The license the request is for (the request names its key hint, which must match).' }),
    request: t.string({ required: true, description: 'The activation request the device wrote (-----BEGIN KEYFORGE ACTIVATION REQUEST----- text, or its one-line KFREQ1: form).' }),
    licenseKey: t.string({ description: "When given, the request's MAC under the key is verified too, and the key must be the license's." }),
  }),
});

const ActivateOfflinePayload = builder
  .objectRef<{ licenseFile: string; expiresAt: Date; activationId: string; licenseId: string; reused: boolean; remainingActivations: number }>('ActivateOfflinePayload')
  .implement({
    fields: (t) => ({
      licenseFile: t.exposeString('licenseFile', { description: 'The activation response: a device license file bound to the device, its key and the request. Give it back to the device.' }),
      expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
      activationId: t.exposeID('activationId'),
      reused: t.exposeBoolean('reused', { description: 'The device already held a seat of the license: no new seat was taken.' }),
      remainingActivations: t.exposeInt('remainingActivations'),
      license: t.field({ type: LicenseType, resolve: (activated, _args, ctx) => getLicense(serviceCtx(ctx), activated.licenseId) }),
    }),
  });

const DeactivateOfflineInput = builder.inputType('DeactivateOfflineInput', {
  fields: (t) => ({
    licenseId: t.id({ description: 'When given, the proof must be for a device of this license.' }),
    proof: t.string({ required: true, description: 'The deactivation proof the device wrote (-----BEGIN KEYFORGE DEACTIVATION PROOF----- text).' }),
  }),
});

const DeactivateOfflinePayload = builder
  .objectRef<{ activationId: string; licenseId: string; deviceId: string | null }>('DeactivateOfflinePayload')
  .implement({
    fields: (t) => ({
      activationId: t.exposeID('activationId', { description: 'The activation freed.' }),
      deviceId: t.exposeString('deviceId', { nullable: true }),
      license: t.field({ type: LicenseType, resolve: (freed, _args, ctx) => getLicense(serviceCtx(ctx), freed.licenseId) }),
    }),
  });

builder.mutationFields((t) => ({
  issueLicenseFile: t.field({
    type: IssueLicenseFilePayload,
    description: 'A signed license file for a license (or one of its activated devices), to verify offline with the SDK. A revoked, suspended or expired license: Conflict.',
    args: { input: t.arg({ type: IssueLicenseFileInput, required: true }) },
    resolve: (_root, { input }, ctx) => staffIssueLicenseFile(fileCtx(ctx), { licenseId: String(input.licenseId), deviceId: input.deviceId, ttlDays: input.ttlDays, licenseKey: input.licenseKey }),
  }),
  activateOffline: t.field({
    type: ActivateOfflinePayload,
    description: 'Air-gapped activation: takes a seat for the device of an activation request (the rules of online activation; a request is accepted once) and answers with its device license file.',
    args: { input: t.arg({ type: ActivateOfflineInput, required: true }) },
    resolve: (_root, { input }, ctx) => staffActivateFromRequest(fileCtx(ctx), { licenseId: String(input.licenseId), requestText: input.request, licenseKey: input.licenseKey }),
  }),
  deactivateOffline: t.field({
    type: DeactivateOfflinePayload,
    description: "Frees the one device a deactivation proof names, verified against the device's key on record. A proof works once.",
    args: { input: t.arg({ type: DeactivateOfflineInput, required: true }) },
    resolve: (_root, { input }, ctx) => staffDeactivateFromProof(fileCtx(ctx), { licenseId: input.licenseId === null || input.licenseId === undefined ? null : String(input.licenseId), proofText: input.proof }),
  }),
}));
