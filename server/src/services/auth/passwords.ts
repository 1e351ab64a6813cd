import { z } from 'zod';
import { argon2Hash, argon2Verify } from './password-hasher.js';

// argon2 is CPU-bound work on the same cores as the licensing API: at most `limit` run at once (in a
// low-priority child process, password-hasher.ts), the rest queue here (sign-in rate limits keep it short).
let limit = 1;
let running = 0;
const waiting: (() => void)[] = [];

export function setPasswordHashConcurrency(n: number): void {
  limit = Math.max(1, n);
}

/** Hashes being computed right now (for tests and metrics). */
export const passwordHashesRunning = () => running;

async function bounded<T>(work: () => Promise<T>): Promise<T> {
  if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next(); // the slot passes straight to the next waiter
    else running--;
  }
}

// argon2id with the library's defaults (m=19 MiB, t=2, p=1: OWASP's recommended minimum).
export const hashPassword = (password: string) => bounded(() => argon2Hash(password));
export const verifyPassword = (passwordHash: string, password: string) => bounded(() => argon2Verify(passwordHash, password).catch(() => false));

// Verifying against a real hash costs the same time as a real check: unknown emails are not revealed by timing.
let dummyHash: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummyHash ??= hashPassword('keyforge-timing-equaliser');
  await verifyPassword(await dummyHash, password);
}

export const PasswordSchema = z.string().min(10, 'must be at least 10 characters').max(200, 'must be at most 200 characters');
export const EmailSchema = z.email().max(320).transform((email) => email.trim().toLowerCase());
