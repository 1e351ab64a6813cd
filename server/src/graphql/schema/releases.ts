import { builder, screamingEnumValues } from '../builder.js';
import { keysetPage, orNull, pageConnection } from '../connections.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { RELEASE_CHANNELS, RELEASE_STATUSES } from '../../services/releases/model.js';
import {
  createRelease,
  deleteArtifact,
  deleteRelease,
  getRelease,
  listProductReleases,
  publishRelease,
  updateRelease,
  yankRelease,
  type ReleaseWithArtifacts,
} from '../../services/releases/releases.js';
import { artifactStoreFor } from '../../services/releases/store.js';

const ReleaseChannelEnum = builder.enumType('ReleaseChannel', {
  description: 'How stable a release is; a client following a channel sees it and every more stable one (STABLE < RC < BETA < ALPHA < DEV).',
  values: screamingEnumValues(RELEASE_CHANNELS),
});
const ReleaseStatusEnum = builder.enumType('ReleaseStatus', {
  description: 'DRAFT: staff only, accepts uploads. PUBLISHED: offered to the licenses that may download it. YANKED: withdrawn for good.',
  values: screamingEnumValues(RELEASE_STATUSES),
});

type Artifact = ReleaseWithArtifacts['artifacts'][number];
const ReleaseArtifactType = builder.objectRef<Artifact>('ReleaseArtifact').implement({
  description: 'A file of a release (uploaded with PUT /api/releases/{releaseId}/artifacts).',
  fields: (t) => ({
    id: t.exposeID('id'),
    filename: t.exposeString('filename'),
    platform: t.exposeString('platform'),
    arch: t.exposeString('arch'),
    filetype: t.exposeString('filetype'),
    size: t.float({ description: 'Bytes.', resolve: (artifact) => Number(artifact.size) }),
    sha256: t.exposeString('sha256'),
    sha512: t.exposeString('sha512'),
    signature: t.exposeString('signature', { description: 'Compact JWS by the installation\'s signing key (docs/integrate/releases.md).' }),
    downloadCount: t.exposeInt('downloadCount', { description: 'Download links handed out for this artifact.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const ReleaseType = builder.objectRef<ReleaseWithArtifacts>('Release').implement({
  description: 'A version of a product that licenses may download (docs/integrate/releases.md).',
  fields: (t) => ({
    id: t.exposeID('id'),
    productId: t.exposeID('productId'),
    version: t.exposeString('version', { description: 'Semantic version, unique per product; fixed once created.' }),
    channel: t.field({ type: ReleaseChannelEnum, resolve: (release) => release.channel }),
    status: t.field({ type: ReleaseStatusEnum, resolve: (release) => release.status }),
    notes: t.exposeString('notes', { nullable: true }),
    requiredFeatures: t.exposeStringList('requiredFeatures', { description: 'Feature keys a license must all have to see and download the release.' }),
    requiresMaintenance: t.exposeBoolean('requiresMaintenance', { description: 'A license with a maintenanceExpiresAt before publishedAt may not download it.' }),
    publishedAt: t.expose('publishedAt', { type: 'DateTime', nullable: true }),
    yankedAt: t.expose('yankedAt', { type: 'DateTime', nullable: true }),
    downloadCount: t.exposeInt('downloadCount', { description: 'Download links handed out for the release\'s artifacts.' }),
    artifacts: t.field({ type: [ReleaseArtifactType], resolve: (release) => release.artifacts }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const storeCtx = (ctx: GraphQLContext) => ({ ...serviceCtx(ctx), store: artifactStoreFor(ctx.deps.config) });

builder.queryFields((t) => ({
  releases: t.connection(
    {
      type: ReleaseType,
      description:
        'The releases of one of your products, newest version first; channel and status narrow them. first/last: 1–100 (default 20); after: an endCursor (with first), before: a startCursor (with last); not both directions at once.',
      args: { productId: t.arg.id({ required: true }), channel: t.arg({ type: ReleaseChannelEnum }), status: t.arg({ type: ReleaseStatusEnum }) },
      resolve: async (_root, args, ctx) =>
        pageConnection(await listProductReleases(serviceCtx(ctx), String(args.productId), { channel: args.channel, status: args.status, ...keysetPage(args) })),
    },
    { name: 'ReleaseConnection' },
    { name: 'ReleaseEdge' },
  ),
  release: t.field({
    type: ReleaseType,
    nullable: true,
    description: 'Null when there is no such release in your company.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => orNull(getRelease(serviceCtx(ctx), String(args.id))),
  }),
}));

const CreateReleaseInput = builder.inputType('CreateReleaseInput', {
  fields: (t) => ({
    productId: t.id({ required: true }),
    version: t.string({ required: true, description: 'Semantic version (a leading v and build metadata are dropped).' }),
    channel: t.field({ type: ReleaseChannelEnum, description: 'Default STABLE.' }),
    notes: t.string(),
    requiredFeatures: t.stringList(),
    requiresMaintenance: t.boolean(),
  }),
});
const UpdateReleaseInput = builder.inputType('UpdateReleaseInput', {
  description: 'Omitted fields stay unchanged. The version cannot change.',
  fields: (t) => ({
    id: t.id({ required: true }),
    channel: t.field({ type: ReleaseChannelEnum }),
    notes: t.string(),
    requiredFeatures: t.stringList(),
    requiresMaintenance: t.boolean(),
  }),
});
const idInput = (name: string) => builder.inputType(name, { fields: (t) => ({ id: t.id({ required: true }) }) });
const PublishReleaseInput = idInput('PublishReleaseInput');
const YankReleaseInput = idInput('YankReleaseInput');
const DeleteReleaseInput = idInput('DeleteReleaseInput');
const DeleteArtifactInput = idInput('DeleteArtifactInput');

const releasePayload = (name: string) =>
  builder.objectRef<ReleaseWithArtifacts>(name).implement({ fields: (t) => ({ release: t.field({ type: ReleaseType, resolve: (release) => release }) }) });
const DeleteReleasePayload = builder.objectRef<{ id: string }>('DeleteReleasePayload').implement({ fields: (t) => ({ deletedReleaseId: t.exposeID('id') }) });
const DeleteArtifactPayload = builder.objectRef<{ id: string }>('DeleteArtifactPayload').implement({ fields: (t) => ({ deletedArtifactId: t.exposeID('id') }) });

builder.mutationFields((t) => ({
  createRelease: t.field({
    type: releasePayload('CreateReleasePayload'),
    description: 'A draft release of one of your products (CompanyAdmin). Upload its files with PUT /api/releases/{id}/artifacts, then publishRelease.',
    args: { input: t.arg({ type: CreateReleaseInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      createRelease(serviceCtx(ctx), { productId: String(input.productId), version: input.version, channel: input.channel ?? undefined, notes: input.notes, requiredFeatures: input.requiredFeatures ?? undefined, requiresMaintenance: input.requiresMaintenance ?? undefined }),
  }),
  updateRelease: t.field({
    type: releasePayload('UpdateReleasePayload'),
    description: 'Changes a release\'s channel, notes or requirements (not once yanked).',
    args: { input: t.arg({ type: UpdateReleaseInput, required: true }) },
    resolve: (_root, { input: { id, ...rest } }, ctx) =>
      updateRelease(serviceCtx(ctx), String(id), { channel: rest.channel ?? undefined, notes: rest.notes, requiredFeatures: rest.requiredFeatures ?? undefined, requiresMaintenance: rest.requiresMaintenance ?? undefined }),
  }),
  publishRelease: t.field({
    type: releasePayload('PublishReleasePayload'),
    description: 'Publishes a draft that has at least one artifact: licenses meeting its requirements see it from now on. Webhook release.published.',
    args: { input: t.arg({ type: PublishReleaseInput, required: true }) },
    resolve: (_root, { input }, ctx) => publishRelease(serviceCtx(ctx), String(input.id)),
  }),
  yankRelease: t.field({
    type: releasePayload('YankReleasePayload'),
    description: 'Withdraws a published release for good: never listed, offered or downloadable again (its version stays taken). Webhook release.yanked.',
    args: { input: t.arg({ type: YankReleaseInput, required: true }) },
    resolve: (_root, { input }, ctx) => yankRelease(serviceCtx(ctx), String(input.id)),
  }),
  deleteRelease: t.field({
    type: DeleteReleasePayload,
    description: 'Deletes a draft and its files (a published release is yanked instead).',
    args: { input: t.arg({ type: DeleteReleaseInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ id: (await deleteRelease(storeCtx(ctx), String(input.id))).id }),
  }),
  deleteArtifact: t.field({
    type: DeleteArtifactPayload,
    description: 'Deletes an artifact of a draft and its file.',
    args: { input: t.arg({ type: DeleteArtifactInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ id: (await deleteArtifact(storeCtx(ctx), String(input.id))).id }),
  }),
}));
