/**
 * Record ids (UUIDs) in console URLs are written without dashes.
 *
 * The server refuses any URL that contains something shaped like a license key
 * (`[A-Z][A-Z0-9]{1,11}(-[A-Z0-9]{4}){4}`), so keys never land in logs — and ~96% of dashed UUIDs match that
 * shape (e.g. `4f1c8a2b-1c3d-4e5f-a6b7-…`). A deep link such as /licenses/<uuid> would then fail with 400
 * when loaded directly. 32 hex digits without dashes never match.
 */
export function compactId(id: string): string {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id) ? id.replace(/-/g, '') : id;
}

/** The API's id from a URL segment (accepts both the compact and the dashed form). */
export function expandId(segment: string): string {
  return /^[0-9a-f]{32}$/i.test(segment)
    ? `${segment.slice(0, 8)}-${segment.slice(8, 12)}-${segment.slice(12, 16)}-${segment.slice(16, 20)}-${segment.slice(20)}`.toLowerCase()
    : segment;
}

export const licensePath = (id: string) => `/licenses/${compactId(id)}`;
