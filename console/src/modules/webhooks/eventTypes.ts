import type { EnumOf } from '../../graphql';

export type WebhookEventType = EnumOf<'WebhookEventType'>;

/**
 * Every value of the schema's `WebhookEventType` enum with the name its payloads carry (docs/integrate/webhooks.md), in the
 * order the filter offers them. Typed by the schema (graphql-env.d.ts): an event type added to or dropped from the
 * enum fails the typecheck here until it is named.
 */
const WIRE_NAMES = {
  LICENSE_CREATED: 'license.created',
  LICENSE_UPDATED: 'license.updated',
  LICENSE_SUSPENDED: 'license.suspended',
  LICENSE_REINSTATED: 'license.reinstated',
  LICENSE_RENEWED: 'license.renewed',
  LICENSE_TRANSFERRED: 'license.transferred',
  LICENSE_KEY_REISSUED: 'license.key_reissued',
  LICENSE_REVOKED: 'license.revoked',
  LICENSE_EXPIRING: 'license.expiring',
  LICENSE_EXPIRED: 'license.expired',
  LICENSE_SEATS_EXHAUSTED: 'license.seats_exhausted',
  LICENSE_SEATS_KEPT: 'license.seats_kept',
  ACTIVATION_CREATED: 'activation.created',
  ACTIVATION_DEACTIVATED: 'activation.deactivated',
  FLOATING_CHECKOUT_DENIED: 'floating.checkout_denied',
  METER_QUOTA_REACHED: 'meter.quota_reached',
  USER_CREATED: 'user.created',
  USER_UPDATED: 'user.updated',
  USER_REMOVED: 'user.removed',
  API_KEY_CREATED: 'api_key.created',
  API_KEY_REMOVED: 'api_key.removed',
  RELEASE_PUBLISHED: 'release.published',
  RELEASE_YANKED: 'release.yanked',
  AUDIT_CHECKPOINT: 'audit.checkpoint',
  WEBHOOK_TEST: 'webhook.test',
} as const satisfies Record<WebhookEventType, string>;

/** LICENSE_SEATS_EXHAUSTED → license.seats_exhausted, as in the payloads. */
export const wireName = (type: WebhookEventType): string => WIRE_NAMES[type];

/** The types an endpoint can subscribe to: every one but the test event, which goes to one endpoint on request whatever its filter. */
export const SUBSCRIBABLE_EVENT_TYPES = (Object.keys(WIRE_NAMES) as WebhookEventType[]).filter((type) => type !== 'WEBHOOK_TEST');
