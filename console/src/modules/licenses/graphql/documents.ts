import { graphql } from '../../../graphql';
import { LicenseListFields } from '../components/LicensesTable';
import { LicenseDetailFields } from '../components/LicenseOverview';

/** One page of a license's activations (a license may have thousands), newest first. */
export const LicenseActivationsQuery = graphql(`
  query LicenseActivations($id: ID!, $first: Int, $after: String) {
    license(id: $id) {
      id
      currentActivations
      activations(first: $first, after: $after) {
        totalCount
        totalCountCapped
        pageInfo {
          endCursor
          hasNextPage
        }
        nodes {
          id
          active
          offline
          deviceId
          deviceName
          version
          userEmail
          ip
          createdAt
          lastSeenAt
          deactivatedAt
        }
      }
    }
  }
`);

export const LicensesQuery = graphql(
  `
    query Licenses($first: Int, $after: String, $filter: LicenseFilter) {
      licenses(first: $first, after: $after, filter: $filter) {
        totalCount
        totalCountCapped
        pageInfo {
          endCursor
          hasNextPage
        }
        nodes {
          ...LicenseListFields
        }
      }
    }
  `,
  [LicenseListFields],
);

export const LicenseQuery = graphql(
  `
    query License($id: ID!) {
      license(id: $id) {
        ...LicenseDetailFields
        quotaChangeBlockedReason
      }
    }
  `,
  [LicenseDetailFields],
);

export const ProductOptionsQuery = graphql(`
  query ProductOptions {
    products {
      nodes {
        id
        name
        isBundle
        allowImportedKeys
      }
    }
    plans {
      nodes {
        id
        name
        product {
          id
          name
        }
        duration
        maxActivations
      }
    }
  }
`);

export const CreateLicenseMutation = graphql(
  `
    mutation CreateLicense($input: CreateLicenseInput!) {
      createLicense(input: $input) {
        key
        license {
          ...LicenseListFields
        }
      }
    }
  `,
  [LicenseListFields],
);

export const UpdateLicenseMutation = graphql(
  `
    mutation UpdateLicense($input: UpdateLicenseInput!) {
      updateLicense(input: $input) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

export const RevokeLicenseMutation = graphql(
  `
    mutation RevokeLicense($id: ID!) {
      revokeLicense(input: { id: $id }) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

export const DeactivateActivationMutation = graphql(
  `
    mutation DeactivateActivation($id: ID!) {
      deactivateActivation(input: { id: $id }) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

// The lifecycle (suspend, reinstate, renew, transfer): each answers with the license.
export const SuspendLicenseMutation = graphql(
  `
    mutation SuspendLicense($id: ID!) {
      suspendLicense(input: { id: $id }) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

export const ReinstateLicenseMutation = graphql(
  `
    mutation ReinstateLicense($id: ID!) {
      reinstateLicense(input: { id: $id }) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

export const RenewLicenseMutation = graphql(
  `
    mutation RenewLicense($id: ID!, $expiresAt: DateTime!) {
      renewLicense(input: { id: $id, expiresAt: $expiresAt }) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

export const TransferLicenseMutation = graphql(
  `
    mutation TransferLicense($id: ID!, $customerEmail: String!) {
      transferLicense(input: { id: $id, customerEmail: $customerEmail }) {
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

// A new key for the same license: the key is in this answer only.
export const ReissueLicenseKeyMutation = graphql(
  `
    mutation ReissueLicenseKey($id: ID!, $overlapHours: Int) {
      reissueLicenseKey(input: { id: $id, overlapHours: $overlapHours }) {
        key
        previousKeyValidUntil
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

/** What the bulk action's confirmation states: the licenses it changes, counted up to 10,000 ("more than 10,000"). */
export const BulkSelectionCountQuery = graphql(`
  query BulkSelectionCount($selection: BulkLicenseSelection!) {
    bulkSelectionTotal(selection: $selection) {
      totalCount
      totalCountCapped
    }
  }
`);

/** A bulk job's progress, as the progress panel shows it. */
export const BulkJobFields = graphql(`
  fragment BulkJobFields on BulkJob {
    id
    action
    total
    done
    failed
    finished
    failures(first: 20) {
      licenseId
      keyHint
      error
    }
  }
`);

export const StartBulkLicenseActionMutation = graphql(
  `
    mutation StartBulkLicenseAction($input: StartBulkLicenseActionInput!) {
      startBulkLicenseAction(input: $input) {
        job {
          ...BulkJobFields
        }
      }
    }
  `,
  [BulkJobFields],
);

export const BulkJobQuery = graphql(
  `
    query BulkJob($id: ID!) {
      bulkJob(id: $id) {
        ...BulkJobFields
      }
    }
  `,
  [BulkJobFields],
);

// Signed license files and air-gapped activation (docs/integrate/license-files.md).
export const IssueLicenseFileMutation = graphql(`
  mutation IssueLicenseFile($input: IssueLicenseFileInput!) {
    issueLicenseFile(input: $input) {
      licenseFile
      expiresAt
      deviceId
      encrypted
    }
  }
`);

export const ActivateOfflineMutation = graphql(
  `
    mutation ActivateOffline($input: ActivateOfflineInput!) {
      activateOffline(input: $input) {
        licenseFile
        expiresAt
        reused
        remainingActivations
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);

export const DeactivateOfflineMutation = graphql(
  `
    mutation DeactivateOffline($input: DeactivateOfflineInput!) {
      deactivateOffline(input: $input) {
        deviceId
        license {
          ...LicenseDetailFields
        }
      }
    }
  `,
  [LicenseDetailFields],
);
