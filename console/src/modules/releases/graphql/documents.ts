import { graphql, type ResultOf } from '../../../graphql';

/** What the Releases page shows of a release and its files. */
export const ReleaseFields = graphql(`
  fragment ReleaseFields on Release {
    id
    version
    channel
    status
    notes
    requiredFeatures
    requiresMaintenance
    createdAt
    publishedAt
    yankedAt
    downloadCount
    artifacts {
      id
      filename
      platform
      arch
      filetype
      size
      sha256
      downloadCount
    }
  }
`);

export type Release = ResultOf<typeof ReleaseFields>;

/** Releases per page: the server's query cost limit allows about 20 releases with their files in one query. */
export const RELEASES_PAGE_SIZE = 20;

export const ProductReleasesQuery = graphql(
  `
    query ProductReleases($productId: ID!, $first: Int!, $after: String, $channel: ReleaseChannel, $status: ReleaseStatus) {
      product(id: $productId) {
        id
        name
      }
      releases(productId: $productId, first: $first, after: $after, channel: $channel, status: $status) {
        totalCount
        totalCountCapped
        pageInfo {
          endCursor
          hasNextPage
        }
        nodes {
          ...ReleaseFields
        }
      }
    }
  `,
  [ReleaseFields],
);

export const UpdateReleaseMutation = graphql(
  `
    mutation UpdateRelease($input: UpdateReleaseInput!) {
      updateRelease(input: $input) {
        release {
          ...ReleaseFields
        }
      }
    }
  `,
  [ReleaseFields],
);

export const CreateReleaseMutation = graphql(
  `
    mutation CreateRelease($input: CreateReleaseInput!) {
      createRelease(input: $input) {
        release {
          ...ReleaseFields
        }
      }
    }
  `,
  [ReleaseFields],
);

export const PublishReleaseMutation = graphql(
  `
    mutation PublishRelease($id: ID!) {
      publishRelease(input: { id: $id }) {
        release {
          ...ReleaseFields
        }
      }
    }
  `,
  [ReleaseFields],
);

export const YankReleaseMutation = graphql(
  `
    mutation YankRelease($id: ID!) {
      yankRelease(input: { id: $id }) {
        release {
          ...ReleaseFields
        }
      }
    }
  `,
  [ReleaseFields],
);

export const DeleteReleaseMutation = graphql(`
  mutation DeleteRelease($id: ID!) {
    deleteRelease(input: { id: $id }) {
      deletedReleaseId
    }
  }
`);

export const DeleteArtifactMutation = graphql(`
  mutation DeleteArtifact($id: ID!) {
    deleteArtifact(input: { id: $id }) {
      deletedArtifactId
    }
  }
`);
