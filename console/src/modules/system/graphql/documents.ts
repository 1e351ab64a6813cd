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
      installationOperator
    }
  }
`);

/** The Installation tab: every company together, for installation operators (OPERATOR_EMAILS). */
export const InstallationStatusQuery = graphql(`
  query InstallationStatus {
    installationStatus {
      companies
      emailsPending
      oldestPendingEmailAt
      webhookDeliveriesPending
      oldestPendingWebhookAt
      webhookEndpointsDisabled
      lastAuditCheckpointAt
      lastAuditVerificationAt
      auditVerificationHolds
      auditVerifiedCompanies
      auditBrokenCompanies
      companiesWithUnanchoredEntries
      unfinishedRuns {
        job
        period
        companiesPending
        companiesFailed
      }
      jobRuns {
        job
        startedAt
        finishedAt
        failedAt
        failReason
        outcome
        durationSeconds
      }
      signingKeyCreatedAt
      redis
      mailProvider
    }
  }
`);
