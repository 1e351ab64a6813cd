import { graphql } from '../../../graphql';

export const EmailsQuery = graphql(`
  query Emails($first: Int, $after: String, $status: EmailStatus, $kind: EmailKind) {
    emails(first: $first, after: $after, status: $status, kind: $kind) {
      totalCount
      pageInfo {
        endCursor
        hasNextPage
      }
      nodes {
        id
        kind
        to
        subject
        status
        attempts
        nextAttemptAt
        lastError
        providerMessageId
        createdAt
        sentAt
      }
    }
    emailDeliveryMode
  }
`);

// The API has no email(id) query: the preview re-reads the same page with the bodies and picks the row.
export const EmailBodiesQuery = graphql(`
  query EmailBodies($first: Int, $after: String, $status: EmailStatus, $kind: EmailKind) {
    emails(first: $first, after: $after, status: $status, kind: $kind) {
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        htmlBody
        textBody
      }
    }
  }
`);

export const JobSchedulesQuery = graphql(`
  query JobSchedules {
    jobSchedules {
      name
      description
      schedule
      timezone
      lastRunAt
      lastFinishedAt
      nextRunAt
      lastFailedAt
      lastFailReason
      running
      canRunNow
    }
  }
`);

export const RunJobNowMutation = graphql(`
  mutation RunJobNow($name: String!) {
    runJobNow(input: { name: $name }) {
      jobSchedule {
        name
      }
    }
  }
`);

export const SendTestEmailMutation = graphql(`
  mutation SendTestEmail {
    sendTestEmail {
      email {
        id
        to
        status
        providerMessageId
        lastError
      }
    }
  }
`);

export const EmailDeliveryModeQuery = graphql(`
  query EmailDeliveryMode {
    emailDeliveryMode
  }
`);
