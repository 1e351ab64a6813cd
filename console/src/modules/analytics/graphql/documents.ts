import { graphql } from '../../../graphql';

export const AnalyticsQuery = graphql(`
  query Analytics($range: AnalyticsRange!, $granularity: Granularity!) {
    analytics(range: $range, granularity: $granularity) {
      range
      granularity
      from
      to
      activationTrend {
        start
        activations
      }
      licensesByProduct {
        productId
        productName
        licenses
        activeLicenses
      }
      licensesByStatus {
        active
        expired
        suspended
        revoked
      }
      licensesByExpiry {
        expired
        within7Days
        within30Days
        within90Days
        later
        perpetual
      }
      seatPool {
        start
        at
        seatsUsed
        seatsAvailable
      }
      topProducts(limit: 5) {
        productId
        productName
        activations
      }
    }
  }
`);
