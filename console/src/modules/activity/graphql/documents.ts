import { graphql } from '../../../graphql';

export const ActivityLogQuery = graphql(`
  query ActivityLog($first: Int, $after: String, $filter: ActivityFilter) {
    activityLog(first: $first, after: $after, filter: $filter) {
      totalCount
      totalCountCapped
      pageInfo {
        endCursor
        hasNextPage
      }
      nodes {
        id
        seq
        action
        entity
        entityType
        entityId
        user
        ip
        timestamp
        details
      }
    }
  }
`);

export const ActivityIntegrityQuery = graphql(`
  query ActivityIntegrity {
    activityLogIntegrity {
      valid
      entries
      pendingEntries
      brokenAtSeq
      problem
      lastFullVerification {
        verifiedAt
        valid
        brokenAtSeq
        problem
        keptCheckpoints
      }
      latestCheckpoint {
        seq
        createdAt
      }
    }
  }
`);

/** The newest signed checkpoint with the public keys: the file a company keeps apart from the service. */
export const ActivityCheckpointFileQuery = graphql(`
  query ActivityCheckpointFile {
    activityLogCheckpointFile
  }
`);

export const ActivityVerificationQuery = graphql(`
  query ActivityVerification($checkpoints: String!) {
    activityLogVerification(checkpoints: $checkpoints) {
      valid
      entries
      brokenAtSeq
      problem
      verifiedAt
      checkpoints {
        seq
        signedAt
        status
        message
      }
    }
  }
`);
