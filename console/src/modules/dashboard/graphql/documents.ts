import { graphql } from '../../../graphql';

export const DashboardQuery = graphql(`
  query Dashboard {
    dashboardStats {
      totalLicenses
      activeLicenses
      activations
      products
      expiringIn7Days
      expiringIn30Days
      expiringLicenses {
        id
        productName
        customerEmail
        expiresAt
        daysUntilExpiry
      }
    }
    analytics(range: LAST_7_DAYS, granularity: DAY) {
      activationTrend {
        start
        activations
      }
    }
    activityLog(first: 6) {
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        action
        entity
        user
        timestamp
      }
    }
  }
`);
