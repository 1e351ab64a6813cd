import { graphql } from '../../../graphql';

export const UsageTotalsQuery = graphql(`
  query UsageTotals($licenseId: ID!, $period: MeterPeriod!) {
    usageTotals(licenseId: $licenseId, period: $period) {
      period
      periodStart
      periodEnd
      totals {
        event
        count
        total
        remaining
        quota {
          limit
          period
        }
      }
    }
  }
`);

export const SetMeterQuotaMutation = graphql(`
  mutation SetMeterQuota($licenseId: ID!, $event: String!, $period: MeterPeriod!, $limit: Int!) {
    setMeterQuota(input: { licenseId: $licenseId, event: $event, period: $period, limit: $limit }) {
      quota {
        limit
        period
      }
    }
  }
`);

export const RemoveMeterQuotaMutation = graphql(`
  mutation RemoveMeterQuota($licenseId: ID!, $event: String!) {
    removeMeterQuota(input: { licenseId: $licenseId, event: $event }) {
      removed
    }
  }
`);
