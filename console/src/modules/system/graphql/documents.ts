import { graphql } from '../../../graphql';

export const SystemStatusQuery = graphql(`
  query SystemStatus {
    systemStatus {
      emailsPending
      oldestPendingEmailAt
      webhookDeliveriesPending
      oldestPendingWebhookAt
      webhookEndpointsDisabled
      lastAuditCheckpointAt
      lastAuditVerificationAt
      auditVerificationHolds
      unfinishedRuns {
        job
        period
        companiesPending
        companiesFailed
      }
      redis
      mailProvider
    }
  }
`);
