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
      brokenAtSeq
    }
  }
`);
