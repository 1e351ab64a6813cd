import { AppError } from '../../domain/errors.js';
import { LICENSE_STATUSES } from '../../services/licenses/predicates.js';
import {
  confirmCustomerKey,
  customerActivateFromRequest,
  customerDeactivateFromProof,
  customerLicenseFile,
  customerLicenses,
  freeCustomerDevice,
  type CustomerLicense,
  type DeviceFreeAllowance,
} from '../../services/portal/customer.js';
import { customerDownloadLink, customerReleases, type CustomerReleases } from '../../services/portal/releases.js';
import { RELEASE_CHANNELS } from '../../services/releases/model.js';
import { artifactStoreFor } from '../../services/releases/store.js';
import { requestPortalSignIn, signInWithPortalLink, signOutPortal, type PortalCompany, type PortalCustomer } from '../../services/portal/sign-in.js';
import { portalCookieAttributes } from '../../session-cookie.js';
import { screamingEnumValues } from '../builder.js';
import { portalBuilder as builder, portalCtx, type PortalGraphQLContext } from './builder.js';

// The customer portal's schema (docs/guide/customer-portal.md). Sign-in is public; everything else needs the
// customer's session at this company (`signedIn`), and the services scope every read by the company and the email.

const signedIn = (ctx: PortalGraphQLContext): PortalCustomer => {
  if (!ctx.customer) throw new AppError('Unauthorized', 'Sign in with the link emailed to you.');
  return ctx.customer;
};

/** Sign-in steps share the sign-in budgets (per client IP and per account) with the console's. */
const signInStep = (ctx: PortalGraphQLContext, account: string | null) => ctx.deps.rateLimits.signIn(ctx.meta.ip ?? 'unknown', account);

const setSessionCookie = async (ctx: PortalGraphQLContext, token: string | null, expires?: Date) => {
  const attributes = portalCookieAttributes(ctx.deps.config.publicUrl, ctx.company.handle);
  await ctx.cookies.set(token && expires ? { ...attributes, value: token, expires: expires.getTime() } : { ...attributes, value: '', expires: 0 });
};

const PortalType = builder.objectRef<PortalCompany>('Portal').implement({
  description: 'The company whose portal this is, as its customers see it.',
  fields: (t) => ({
    name: t.exposeString('name'),
    handle: t.exposeString('handle'),
    logoUrl: t.exposeString('logoUrl', { nullable: true }),
    accentColor: t.exposeString('accentColor', { nullable: true, description: '#rrggbb; null: the default.' }),
    supportEmail: t.exposeString('supportEmail', { nullable: true }),
  }),
});

const CustomerType = builder.objectRef<PortalCustomer>('Customer').implement({
  fields: (t) => ({
    email: t.exposeString('email'),
    sessionExpiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'The session ends then: sign in again with a new link.' }),
  }),
});

const LicenseStatusEnum = builder.enumType('LicenseStatus', { values: screamingEnumValues(LICENSE_STATUSES) });

type Device = CustomerLicense['devices'][number];
const DeviceType = builder.objectRef<Device>('Device').implement({
  description: 'A device (an installation) holding a seat of the license.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('deviceName', { nullable: true }),
    deviceId: t.exposeString('deviceId', { nullable: true, description: 'The identifier the application reported for the device.' }),
    version: t.exposeString('version', { nullable: true }),
    lastSeenAt: t.expose('lastSeenAt', { type: 'DateTime' }),
    activatedAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const DeviceFreeAllowanceType = builder.objectRef<DeviceFreeAllowance>('DeviceFreeAllowance').implement({
  description: 'Devices of the product the customer may free in the portal: limit per windowDays, and how many are left.',
  fields: (t) => ({
    limit: t.exposeInt('limit'),
    windowDays: t.exposeInt('windowDays'),
    used: t.exposeInt('used'),
    remaining: t.exposeInt('remaining'),
    nextAt: t.expose('nextAt', { type: 'DateTime', nullable: true, description: 'When none is left: when the next one becomes available.' }),
  }),
});

const LicenseType = builder.objectRef<CustomerLicense>('License').implement({
  description: 'One of your licenses. Its key is never shown: only its hint (the key stays with you).',
  fields: (t) => ({
    id: t.exposeID('id'),
    keyHint: t.exposeString('keyHint'),
    status: t.field({ type: LicenseStatusEnum, resolve: (license) => license.state }),
    productName: t.exposeString('productName'),
    features: t.exposeStringList('features'),
    isTrial: t.exposeBoolean('isTrial'),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true, description: 'Null: perpetual.' }),
    gracePeriodDays: t.exposeInt('gracePeriodDays', { nullable: true }),
    graceEndsAt: t.expose('graceEndsAt', { type: 'DateTime', nullable: true, description: 'After expiry the license keeps working until then; null: no grace.' }),
    maintenanceExpiresAt: t.expose('maintenanceExpiresAt', { type: 'DateTime', nullable: true }),
    seatsUsed: t.exposeInt('currentActivations'),
    seatsTotal: t.exposeInt('maxActivations'),
    floatingSeats: t.exposeInt('floatingSeats', { nullable: true, description: 'The floating (concurrent) pool; null: none.' }),
    floatingInUse: t.exposeInt('floatingInUse'),
    renewalUrl: t.exposeString('renewalUrl', { nullable: true }),
    devices: t.field({ type: [DeviceType], description: 'Active devices, most recently seen first (at most 200).', resolve: (license) => license.devices }),
    deviceFrees: t.field({ type: DeviceFreeAllowanceType, nullable: true, description: 'Null: devices of this product cannot be freed in the portal.', resolve: (license) => license.deviceFrees }),
  }),
});

builder.queryType({
  fields: (t) => ({
    portal: t.field({ type: PortalType, description: 'Public: the company and its branding.', resolve: (_root, _args, ctx) => ctx.company }),
    me: t.field({ type: CustomerType, nullable: true, description: 'The signed-in customer; null when signed out.', resolve: (_root, _args, ctx) => ctx.customer }),
    licenses: t.field({
      type: [LicenseType],
      description: 'Your licenses of this company, newest first (at most 200).',
      resolve: (_root, _args, ctx) => customerLicenses(portalCtx(ctx), ctx.company, signedIn(ctx)),
    }),
  }),
});

const RequestSignInLinkInput = builder.inputType('RequestSignInLinkInput', { fields: (t) => ({ email: t.string({ required: true }) }) });
const SignInInput = builder.inputType('SignInInput', { fields: (t) => ({ token: t.string({ required: true, description: 'From the link in the email (after #token=).' }) }) });
const SignOutInput = builder.inputType('SignOutInput', { fields: (t) => ({ everywhere: t.boolean({ description: 'End every session of yours at this company, not only this one.' }) }) });
const FreeDeviceInput = builder.inputType('FreeDeviceInput', { fields: (t) => ({ id: t.id({ required: true, description: 'Device.id' }) }) });
const ConfirmLicenseKeyInput = builder.inputType('ConfirmLicenseKeyInput', { fields: (t) => ({ licenseId: t.id({ required: true }), key: t.string({ required: true }) }) });

const RequestSignInLinkPayload = builder.objectRef<{ email: string }>('RequestSignInLinkPayload').implement({
  description: 'The same answer whether or not the address has licenses here: a link is emailed only if it does.',
  fields: (t) => ({ email: t.exposeString('email') }),
});
const SignInPayload = builder.objectRef<PortalCustomer>('SignInPayload').implement({ fields: (t) => ({ customer: t.field({ type: CustomerType, resolve: (customer) => customer }) }) });
const SignOutPayload = builder.objectRef<{ sessionsEnded: number }>('SignOutPayload').implement({ fields: (t) => ({ sessionsEnded: t.exposeInt('sessionsEnded') }) });
const FreeDevicePayload = builder.objectRef<CustomerLicense>('FreeDevicePayload').implement({ fields: (t) => ({ license: t.field({ type: LicenseType, resolve: (license) => license }) }) });
const ConfirmLicenseKeyPayload = builder.objectRef<{ matches: boolean }>('ConfirmLicenseKeyPayload').implement({
  description: 'Whether the key you typed is this license’s key (Keyforge keeps only a digest of it).',
  fields: (t) => ({ matches: t.exposeBoolean('matches') }),
});

builder.mutationType({
  fields: (t) => ({
    requestSignInLink: t.field({
      type: RequestSignInLinkPayload,
      description: 'Public: emails a sign-in link (single use, 15 minutes) when the address has licenses of this company. The answer is the same either way.',
      args: { input: t.arg({ type: RequestSignInLinkInput, required: true }) },
      resolve: async (_root, { input }, ctx) => {
        await signInStep(ctx, `portal-link:${ctx.company.id}:${input.email.slice(0, 400)}`);
        await requestPortalSignIn({ ...portalCtx(ctx), publicUrl: ctx.deps.config.publicUrl, transport: ctx.deps.jobs?.transport }, ctx.company, input);
        return { email: input.email.trim().toLowerCase() };
      },
    }),
    signIn: t.field({
      type: SignInPayload,
      description: 'Public: signs in with an emailed link (it works once) and sets the session cookie.',
      args: { input: t.arg({ type: SignInInput, required: true }) },
      resolve: async (_root, { input }, ctx) => {
        await signInStep(ctx, null);
        const { token, customer } = await signInWithPortalLink(portalCtx(ctx), ctx.company, input);
        await setSessionCookie(ctx, token, customer.expiresAt);
        return customer;
      },
    }),
    signOut: t.field({
      type: SignOutPayload,
      description: 'Ends this session, or with everywhere every session of yours at this company.',
      args: { input: t.arg({ type: SignOutInput, required: true }) },
      resolve: async (_root, { input }, ctx) => {
        const sessionsEnded = await signOutPortal(portalCtx(ctx), signedIn(ctx), { everywhere: input.everywhere === true });
        await setSessionCookie(ctx, null);
        return { sessionsEnded };
      },
    }),
    freeDevice: t.field({
      type: FreeDevicePayload,
      description: 'Frees a device’s seat (deactivates it), within the product’s limit of frees per window.',
      args: { input: t.arg({ type: FreeDeviceInput, required: true }) },
      resolve: (_root, { input }, ctx) => freeCustomerDevice(portalCtx(ctx), ctx.company, signedIn(ctx), { deviceId: String(input.id) }),
    }),
    confirmLicenseKey: t.field({
      type: ConfirmLicenseKeyPayload,
      description: 'Whether a key you typed is this license’s key. Rate limited like a sign-in.',
      args: { input: t.arg({ type: ConfirmLicenseKeyInput, required: true }) },
      resolve: async (_root, { input }, ctx) => {
        const customer = signedIn(ctx);
        await signInStep(ctx, `portal-key:${customer.sessionId}`);
        return { matches: await confirmCustomerKey(portalCtx(ctx), ctx.company, customer, { licenseId: String(input.licenseId), key: input.key }) };
      },
    }),
  }),
});

// License files and air-gapped activation (services/license-files, through services/portal/customer.ts).
const fileCtx = (ctx: PortalGraphQLContext) => ({ ...portalCtx(ctx), signer: ctx.deps.signer, issuer: ctx.deps.config.publicUrl });

const DownloadLicenseFileInput = builder.inputType('DownloadLicenseFileInput', {
  fields: (t) => ({
    licenseId: t.id({ required: true }),
    deviceId: t.id({ description: 'Device.id: a file bound to that device. Omitted: a file for the license alone.' }),
    key: t.string({ description: 'The license key, re-entered: the file is then encrypted under it.' }),
  }),
});
const UploadActivationRequestInput = builder.inputType('UploadActivationRequestInput', {
  fields: (t) => ({
    licenseId: t.id({ required: true }),
    request: t.string({ required: true, description: 'The armored activation request the application wrote (-----BEGIN KEYFORGE ACTIVATION REQUEST-----).' }),
    key: t.string({ description: 'The license key, re-entered: the request’s proof of possession is verified too.' }),
  }),
});
const UploadDeactivationProofInput = builder.inputType('UploadDeactivationProofInput', {
  fields: (t) => ({ licenseId: t.id({ required: true }), proof: t.string({ required: true, description: 'The armored deactivation proof the application wrote.' }) }),
});

type IssuedFile = { licenseFile: string; issuedAt: Date; expiresAt: Date; deviceId: string | null; encrypted: boolean };
const LicenseFilePayload = builder.objectRef<IssuedFile>('LicenseFilePayload').implement({
  description: 'A signed license file: save it as a .lic file next to the application (it verifies it offline).',
  fields: (t) => ({
    licenseFile: t.exposeString('licenseFile', { description: 'The armored file (-----BEGIN KEYFORGE LICENSE FILE-----).' }),
    issuedAt: t.expose('issuedAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'The application stops accepting it then: download a new one before.' }),
    deviceId: t.exposeString('deviceId', { nullable: true }),
    encrypted: t.exposeBoolean('encrypted'),
  }),
});

builder.mutationFields((t) => ({
  downloadLicenseFile: t.field({
    type: LicenseFilePayload,
    description: 'A signed license file for one of your licenses, for one of its devices or the license alone.',
    args: { input: t.arg({ type: DownloadLicenseFileInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      customerLicenseFile(fileCtx(ctx), signedIn(ctx), { licenseId: String(input.licenseId), deviceId: input.deviceId === null || input.deviceId === undefined ? null : String(input.deviceId), licenseKey: input.key }),
  }),
  uploadActivationRequest: t.field({
    type: LicenseFilePayload,
    description: 'Activates a machine without internet from its activation request: the device license file to take back to it.',
    args: { input: t.arg({ type: UploadActivationRequestInput, required: true }) },
    resolve: (_root, { input }, ctx) => customerActivateFromRequest(fileCtx(ctx), signedIn(ctx), { licenseId: String(input.licenseId), requestText: input.request, licenseKey: input.key }),
  }),
  uploadDeactivationProof: t.field({
    type: FreeDevicePayload,
    description: 'Frees the device a deactivation proof names (the application wrote it when it gave its seat up offline).',
    args: { input: t.arg({ type: UploadDeactivationProofInput, required: true }) },
    resolve: (_root, { input }, ctx) => customerDeactivateFromProof(fileCtx(ctx), ctx.company, signedIn(ctx), { licenseId: String(input.licenseId), proofText: input.proof }),
  }),
}));


// Downloads (services/portal/releases.ts): the releases each license may download, and a short-lived link to one file.
type ProductDownloads = CustomerReleases['products'][number];
type PortalRelease = ProductDownloads['releases'][number];
const ReleaseChannelEnum = builder.enumType('ReleaseChannel', {
  description: 'How stable a release is; following a channel shows it and every more stable one (STABLE < RC < BETA < ALPHA < DEV).',
  values: screamingEnumValues(RELEASE_CHANNELS),
});
const ReleaseArtifactType = builder.objectRef<PortalRelease['artifacts'][number]>('ReleaseArtifact').implement({
  description: 'A file of a release.',
  fields: (t) => ({
    id: t.exposeID('id'),
    filename: t.exposeString('filename'),
    platform: t.exposeString('platform'),
    arch: t.exposeString('arch'),
    filetype: t.exposeString('filetype'),
    size: t.exposeFloat('size', { description: 'Bytes.' }),
    sha256: t.exposeString('sha256', { description: 'Hex.' }),
  }),
});
const ReleaseType = builder.objectRef<PortalRelease>('Release').implement({
  description: 'A published release a license may download.',
  fields: (t) => ({
    id: t.exposeID('id'),
    version: t.exposeString('version'),
    channel: t.field({ type: ReleaseChannelEnum, resolve: (release) => release.channel }),
    notes: t.exposeString('notes', { nullable: true }),
    publishedAt: t.exposeString('publishedAt', { description: 'ISO 8601.' }),
    artifacts: t.field({ type: [ReleaseArtifactType], resolve: (release) => release.artifacts }),
  }),
});
const ProductDownloadsType = builder.objectRef<ProductDownloads>('ProductDownloads').implement({
  description: 'A product a license grants and the releases of it the license may download.',
  fields: (t) => ({
    productId: t.exposeID('productId'),
    productName: t.exposeString('productName'),
    releases: t.field({ type: [ReleaseType], description: 'Releases of the channel asked for and the more stable ones, newest first (at most 20).', resolve: (product) => product.releases }),
  }),
});
const LicenseDownloadsType = builder.objectRef<CustomerReleases>('LicenseDownloads').implement({
  description: 'One of your licenses and the releases it may download.',
  fields: (t) => ({
    licenseId: t.exposeID('licenseId'),
    keyHint: t.exposeString('keyHint'),
    productName: t.exposeString('productName'),
    refusal: t.exposeString('refusal', { nullable: true, description: 'Why this license may download nothing (revoked, suspended, expired); null otherwise.' }),
    products: t.field({
      type: [ProductDownloadsType],
      description: 'The license’s product; for a bundle, each member product it grants (by name), after the bundle itself when it has releases of its own. Empty when refused.',
      resolve: (license) => license.products,
    }),
  }),
});
const DownloadLinkPayload = builder.objectRef<{ url: string; expiresAt: string }>('DownloadLinkPayload').implement({
  fields: (t) => ({
    url: t.exposeString('url', { description: 'Short-lived: follow it at once.' }),
    expiresAt: t.exposeString('expiresAt', { description: 'ISO 8601.' }),
  }),
});
const DownloadArtifactInput = builder.inputType('DownloadArtifactInput', { fields: (t) => ({ licenseId: t.id({ required: true }), artifactId: t.id({ required: true }) }) });
const downloadCtx = (ctx: PortalGraphQLContext) => ({
  ...portalCtx(ctx),
  store: artifactStoreFor(ctx.deps.config),
  publicUrl: ctx.deps.config.publicUrl,
  downloadLinkSeconds: ctx.deps.config.releases.downloadLinkSeconds,
});

builder.queryFields((t) => ({
  downloads: t.field({
    type: [LicenseDownloadsType],
    description: 'Each of your licenses with the published releases it may download.',
    args: { channel: t.arg({ type: ReleaseChannelEnum, description: 'Default STABLE.' }) },
    resolve: (_root, { channel }, ctx) => customerReleases(portalCtx(ctx), signedIn(ctx), { channel: channel ?? undefined }),
  }),
}));

builder.mutationFields((t) => ({
  downloadArtifact: t.field({
    type: DownloadLinkPayload,
    description: 'A short-lived link to a file of a release one of your licenses may download (counted as a download).',
    args: { input: t.arg({ type: DownloadArtifactInput, required: true }) },
    resolve: (_root, { input }, ctx) => customerDownloadLink(downloadCtx(ctx), signedIn(ctx), { licenseId: String(input.licenseId), artifactId: String(input.artifactId) }),
  }),
}));

export const portalSchema = builder.toSchema({ sortSchema: false });
