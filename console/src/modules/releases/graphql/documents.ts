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

/** The newest releases only: the server's query cost limit allows about 20 releases with their files in one query. */
export const RELEASES_SHOWN = 20;

export const ProductReleasesQuery = graphql(
  `
    query ProductReleases($productId: ID!, $first: Int!) {
      product(id: $productId) {
        id
        name
      }
      releases(productId: $productId, first: $first) {
        totalCount
        nodes {
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
