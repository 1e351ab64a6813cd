// Small helpers over the web platform (fetch, WebCrypto, timers) that Node ≥ 20, Deno, Bun and browsers share.

/** `bytes` random bytes from the platform CSPRNG, base64url-encoded. */
export function randomToken(bytes = 16): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Lower-case hex SHA-256 of a UTF-8 string. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A signal that aborts when any of `signals` does (AbortSignal.any where the platform has it). */
export function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  const present = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (present.length === 1) return present[0];
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (any) return any.call(AbortSignal, present);
  const controller = new AbortController();
  for (const signal of present) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true, signal: controller.signal });
  }
  return controller.signal;
}

/** Node, Bun and Deno (2.x) timers keep the process alive unless unref'd; browsers return a number. */
export function unref(timer: unknown): void {
  (timer as { unref?: () => void } | null)?.unref?.();
}

/** A monotonic clock in milliseconds (immune to the wall clock being changed). */
export const monotonic = (): number => performance.now();

/** Keyforge's own key format, `PREFIX-XXXX-XXXX-XXXX-XXXX`. */
const KEYFORGE_KEY = /^[A-Z][A-Z0-9]{1,11}(-[ABCDEFGHJKMNPQRSTVWXYZ23456789]{4}){4}$/;

/** Whether a key (as `normalizeKey` gives it) is in Keyforge's own format, rather than imported from another service. */
export const isKeyforgeKey = (key: string): boolean => KEYFORGE_KEY.test(key);

/**
 * A license key as the server compares it: a Keyforge key without its white space, upper-cased; any other key (one
 * imported from another licensing service) exactly as given, only the white space around it trimmed. The SDK checks
 * no format: the server answers a key that is none.
 */
export const normalizeKey = (licenseKey: string): string => {
  const keyforge = licenseKey.replace(/\s+/g, '').toUpperCase();
  return KEYFORGE_KEY.test(keyforge) ? keyforge : licenseKey.trim();
};
