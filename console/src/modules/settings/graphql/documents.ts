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
      portalHandle
      portalLogoUrl
      portalAccentColor
    }
  }
`);

export const UpdateCompanySettingsMutation = graphql(`
  mutation UpdateCompanySettings(
    $name: String
    $keyPrefix: String
    $renewalUrl: String
    $supportEmail: String
    $portalHandle: String
    $portalLogoUrl: String
    $portalAccentColor: String
  ) {
    updateCompanySettings(
      input: {
        name: $name
        keyPrefix: $keyPrefix
        renewalUrl: $renewalUrl
        supportEmail: $supportEmail
        portalHandle: $portalHandle
        portalLogoUrl: $portalLogoUrl
        portalAccentColor: $portalAccentColor
      }
    ) {
      company {
        id
        name
        keyPrefix
        subscriptionEndsAt
        renewalUrl
        supportEmail
        portalHandle
        portalLogoUrl
        portalAccentColor
      }
    }
  }
`);
