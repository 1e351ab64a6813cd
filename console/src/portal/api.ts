import { Client, fetchExchange, gql } from 'urql';

// The customer portal's client: its own GraphQL endpoint (`/portal/<handle>/graphql`) and its own session cookie
// (httpOnly, scoped to the portal: the page never sees it). Nothing here is shared with the console's session.

/** The portal's handle: the path segment after /portal/. */
export const portalHandle = () => decodeURIComponent(window.location.pathname.split('/')[2] ?? '');
export const portalBase = () => `/portal/${encodeURIComponent(portalHandle())}`;

export function createPortalClient() {
  return new Client({
    url: `${portalBase()}/graphql`,
    exchanges: [fetchExchange],
    requestPolicy: 'network-only',
    // A header a cross-site form cannot send: the endpoint refuses cookie-carrying requests without it.
    fetchOptions: { credentials: 'same-origin', headers: { 'x-keyforge-csrf': '1' } },
  });
}

export interface Portal {
  name: string;
  handle: string;
  logoUrl: string | null;
  accentColor: string | null;
  supportEmail: string | null;
}

export interface Device {
  id: string;
  name: string | null;
  deviceId: string | null;
  version: string | null;
  lastSeenAt: string;
  activatedAt: string;
}

export interface DeviceFrees {
  limit: number;
  windowDays: number;
  used: number;
  remaining: number;
  nextAt: string | null;
}

export type LicenseStatus = 'ACTIVE' | 'EXPIRED' | 'SUSPENDED' | 'REVOKED';

export interface License {
  id: string;
  keyHint: string;
  status: LicenseStatus;
  productName: string;
  features: string[];
  isTrial: boolean;
  expiresAt: string | null;
  graceEndsAt: string | null;
  maintenanceExpiresAt: string | null;
  seatsUsed: number;
  seatsTotal: number;
  floatingSeats: number | null;
  floatingInUse: number;
  renewalUrl: string | null;
  devices: Device[];
  deviceFrees: DeviceFrees | null;
}

export const PortalQuery = gql<{ portal: Portal; me: { email: string; sessionExpiresAt: string } | null }>`
  query Portal {
    portal {
      name
      handle
      logoUrl
      accentColor
      supportEmail
    }
    me {
      email
      sessionExpiresAt
    }
  }
`;

const LICENSE_FIELDS = `
  id keyHint status productName features isTrial expiresAt graceEndsAt maintenanceExpiresAt seatsUsed seatsTotal floatingSeats floatingInUse renewalUrl
  devices { id name deviceId version lastSeenAt activatedAt }
  deviceFrees { limit windowDays used remaining nextAt }
`;

export const LicensesQuery = gql<{ licenses: License[] }>(`query Licenses { licenses { ${LICENSE_FIELDS} } }`);

export const RequestLinkMutation = gql<{ requestSignInLink: { email: string } }, { email: string }>`
  mutation RequestSignInLink($email: String!) {
    requestSignInLink(input: { email: $email }) {
      email
    }
  }
`;

export const SignInMutation = gql<{ signIn: { customer: { email: string } } }, { token: string }>`
  mutation SignIn($token: String!) {
    signIn(input: { token: $token }) {
      customer {
        email
      }
    }
  }
`;

export const SignOutMutation = gql<{ signOut: { sessionsEnded: number } }, { everywhere: boolean }>`
  mutation SignOut($everywhere: Boolean!) {
    signOut(input: { everywhere: $everywhere }) {
      sessionsEnded
    }
  }
`;

export const FreeDeviceMutation = gql<{ freeDevice: { license: License } }, { id: string }>(
  `mutation FreeDevice($id: ID!) { freeDevice(input: { id: $id }) { license { ${LICENSE_FIELDS} } } }`,
);

export const ConfirmKeyMutation = gql<{ confirmLicenseKey: { matches: boolean } }, { licenseId: string; key: string }>`
  mutation ConfirmLicenseKey($licenseId: ID!, $key: String!) {
    confirmLicenseKey(input: { licenseId: $licenseId, key: $key }) {
      matches
    }
  }
`;

/** The message of a failed operation, as the customer should read it. */
export function errorMessage(error: { graphQLErrors?: { message: string }[]; networkError?: Error } | undefined): string | null {
  if (!error) return null;
  if (error.graphQLErrors?.length) return error.graphQLErrors[0].message;
  return 'The portal cannot be reached right now. Try again in a moment.';
}
