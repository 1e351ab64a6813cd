import { Client, fetchExchange, gql } from 'urql';
import type { ReleaseChannel } from '../lib/releaseChannels';

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

export interface IssuedLicenseFile {
  licenseFile: string;
  expiresAt: string;
  deviceId: string | null;
  encrypted: boolean;
}

export const DownloadLicenseFileMutation = gql<{ downloadLicenseFile: IssuedLicenseFile }, { licenseId: string; deviceId: string | null }>`
  mutation DownloadLicenseFile($licenseId: ID!, $deviceId: ID) {
    downloadLicenseFile(input: { licenseId: $licenseId, deviceId: $deviceId }) {
      licenseFile
      expiresAt
      deviceId
      encrypted
    }
  }
`;

export const UploadActivationRequestMutation = gql<{ uploadActivationRequest: IssuedLicenseFile }, { licenseId: string; request: string }>`
  mutation UploadActivationRequest($licenseId: ID!, $request: String!) {
    uploadActivationRequest(input: { licenseId: $licenseId, request: $request }) {
      licenseFile
      expiresAt
      deviceId
      encrypted
    }
  }
`;

export const UploadDeactivationProofMutation = gql<{ uploadDeactivationProof: { license: License } }, { licenseId: string; proof: string }>(
  `mutation UploadDeactivationProof($licenseId: ID!, $proof: String!) { uploadDeactivationProof(input: { licenseId: $licenseId, proof: $proof }) { license { ${LICENSE_FIELDS} } } }`,
);

/** Saves text as a file the browser downloads. */
export function saveTextFile(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const anchor = document.createElement('a');
  anchor.href = url;
  anchor.download = name;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A file name from free text (a product or device name): letters, digits and hyphens. */
export const fileNamePart = (text: string) => text.normalize('NFKD').replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').toLowerCase() || 'license';

export interface ReleaseArtifact {
  id: string;
  filename: string;
  platform: string;
  arch: string;
  filetype: string;
  size: number;
}

export interface Release {
  id: string;
  version: string;
  channel: ReleaseChannel;
  notes: string | null;
  publishedAt: string;
  artifacts: ReleaseArtifact[];
}

export interface ProductDownloads {
  productId: string;
  productName: string;
  releases: Release[];
}

export interface LicenseDownloads {
  licenseId: string;
  keyHint: string;
  productName: string;
  refusal: string | null;
  /** The license's product; for a bundle, each member it grants (and the bundle itself when it has releases). */
  products: ProductDownloads[];
}

export const DownloadsQuery = gql<{ downloads: LicenseDownloads[] }, { channel: ReleaseChannel }>`
  query Downloads($channel: ReleaseChannel) {
    downloads(channel: $channel) {
      licenseId
      keyHint
      productName
      refusal
      products {
        productId
        productName
        releases {
          id
          version
          channel
          notes
          publishedAt
          artifacts {
            id
            filename
            platform
            arch
            filetype
            size
          }
        }
      }
    }
  }
`;

export const DownloadArtifactMutation = gql<{ downloadArtifact: { url: string; expiresAt: string } }, { licenseId: string; artifactId: string }>`
  mutation DownloadArtifact($licenseId: ID!, $artifactId: ID!) {
    downloadArtifact(input: { licenseId: $licenseId, artifactId: $artifactId }) {
      url
      expiresAt
    }
  }
`;
