import { hash, verify } from '@node-rs/argon2';
import { z } from 'zod';

// argon2id with the library's defaults (m=19 MiB, t=2, p=1: OWASP's recommended minimum).
export const hashPassword = (password: string) => hash(password);
export const verifyPassword = (passwordHash: string, password: string) => verify(passwordHash, password).catch(() => false);

// Verifying against a real hash costs the same time as a real check: unknown emails are not revealed by timing.
let dummyHash: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummyHash ??= hash('keyforge-timing-equaliser');
  await verify(await dummyHash, password).catch(() => false);
}

export const PasswordSchema = z.string().min(10, 'must be at least 10 characters').max(200, 'must be at most 200 characters');
export const EmailSchema = z.email().max(320).transform((email) => email.trim().toLowerCase());
