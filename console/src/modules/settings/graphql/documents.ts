import { graphql } from '../../../graphql';

export const CompanyQuery = graphql(`
  query Company {
    company {
      id
      name
      keyPrefix
      subscriptionEndsAt
      renewalUrl
      supportEmail
    }
  }
`);

export const UpdateCompanySettingsMutation = graphql(`
  mutation UpdateCompanySettings($name: String, $keyPrefix: String, $renewalUrl: String, $supportEmail: String) {
    updateCompanySettings(input: { name: $name, keyPrefix: $keyPrefix, renewalUrl: $renewalUrl, supportEmail: $supportEmail }) {
      company {
        id
        name
        keyPrefix
        subscriptionEndsAt
        renewalUrl
        supportEmail
      }
    }
  }
`);
