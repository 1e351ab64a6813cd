import { z } from 'zod';

/** Client-side checks mirroring the server's rules, so mistakes show before a round trip. */
export const KEY_PREFIX_PATTERN = /^[A-Z][A-Z0-9]{1,11}$/;

export function validateKeyPrefix(prefix: string): string | undefined {
  return KEY_PREFIX_PATTERN.test(prefix) ? undefined : '2–12 letters or digits, starting with a letter.';
}

export function validatePassword(password: string): string | undefined {
  if (password.length < 10) return 'At least 10 characters.';
  if (password.length > 200) return 'At most 200 characters.';
  return undefined;
}

/** validatePassword as a zod schema (for @mantine/form dialogs). */
export const passwordSchema = z.string().superRefine((password, ctx) => {
  const problem = validatePassword(password);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** validateKeyPrefix as a zod schema. */
export const keyPrefixSchema = z.string().superRefine((prefix, ctx) => {
  const problem = validateKeyPrefix(prefix);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A new password typed twice (setup, accepting an invitation, changing it). */
export const newPasswordSchema = z
  .object({ password: passwordSchema, confirm: z.string() })
  .refine((form) => form.confirm === form.password, { path: ['confirm'], message: 'The passwords do not match.', when: () => true });
