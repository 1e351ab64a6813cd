import { graphql } from '../../../graphql';

export const FloatingSessionsQuery = graphql(`
  query FloatingSessions($licenseId: ID!) {
    floatingSessions(licenseId: $licenseId) {
      floatingSeats
      inUse
      sessions {
        nodes {
          id
        deviceId
        deviceName
        ip
        createdAt
        lastHeartbeatAt
          leaseExpiresAt
        }
      }
    }
  }
`);

export const EndFloatingSessionMutation = graphql(`
  mutation EndFloatingSession($id: ID!) {
    endFloatingSession(input: { id: $id }) {
      floatingSession {
        id
        endedAt
        endReason
      }
    }
  }
`);

export const FloatingPoolQuery = graphql(`
  query FloatingPool($bucket: PoolBucketSize!, $from: DateTime!, $to: DateTime!, $licenseId: ID) {
    floatingPoolConsumption(bucket: $bucket, from: $from, to: $to, licenseId: $licenseId) {
      bucketStart
      bucketEnd
      peakInUse
      poolSize
    }
  }
`);
