import { graphql } from '../../../graphql';

// The CSV import (docs/integrate/management-api.md "Importing licenses from CSV"): the dry run's report, the job's progress, the keys once.

export const LicenseImportReportFields = graphql(`
  fragment LicenseImportReportFields on LicenseImportReport {
    rows
    valid
    alreadyImported
    errorCount
    errors {
      line
      column
      message
    }
  }
`);

export const CheckLicenseImportMutation = graphql(
  `
    mutation CheckLicenseImport($input: CheckLicenseImportInput!) {
      checkLicenseImport(input: $input) {
        report {
          ...LicenseImportReportFields
        }
      }
    }
  `,
  [LicenseImportReportFields],
);

export const LicenseImportJobFields = graphql(`
  fragment LicenseImportJobFields on LicenseImportJob {
    id
    total
    done
    created
    skipped
    failed
    finished
    keysToDownload
    failures(first: 20) {
      line
      error
    }
  }
`);

export const StartLicenseImportMutation = graphql(
  `
    mutation StartLicenseImport($input: StartLicenseImportInput!) {
      startLicenseImport(input: $input) {
        job {
          ...LicenseImportJobFields
        }
      }
    }
  `,
  [LicenseImportJobFields],
);

export const LicenseImportJobQuery = graphql(
  `
    query LicenseImportJob($id: ID!) {
      licenseImportJob(id: $id) {
        ...LicenseImportJobFields
      }
    }
  `,
  [LicenseImportJobFields],
);

export const TakeLicenseImportKeysMutation = graphql(`
  mutation TakeLicenseImportKeys($input: TakeLicenseImportKeysInput!) {
    takeLicenseImportKeys(input: $input) {
      csv
      keys
    }
  }
`);
