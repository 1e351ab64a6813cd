import type { RateLimitState } from '../../ratelimit/index.js';

/** The IETF RateLimit-* headers of a limit's state, sent on every public API answer (past the limit: 429 from RateLimited). */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return { 'RateLimit-Limit': String(state.limit), 'RateLimit-Remaining': String(state.remaining), 'RateLimit-Reset': String(state.resetSeconds) };
}
