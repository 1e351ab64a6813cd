import { graphql } from '../../../graphql';

export const CompanyQuery = graphql(`
  query Company {
    company {
      id
      name
      keyPrefix
      subscriptionEndsAt
    }
  }
`);

export const UpdateCompanySettingsMutation = graphql(`
  mutation UpdateCompanySettings($name: String, $keyPrefix: String) {
    updateCompanySettings(name: $name, keyPrefix: $keyPrefix) {
      id
      name
      keyPrefix
      subscriptionEndsAt
    }
  }
`);
