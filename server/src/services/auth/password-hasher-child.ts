import { setPriority } from 'node:os';
import { hash, verify } from '@node-rs/argon2';

// The password hasher's child process (started by password-hasher.ts): argon2 at the lowest CPU priority, so the
// kernel gives the cores to the licensing API first. One request per message; answers carry the request's id.

export type HashRequest = { id: number } & ({ op: 'hash'; password: string } | { op: 'verify'; hash: string; password: string });
export type HashAnswer = { id: number; result: string | boolean } | { id: number; error: string };

try {
  setPriority(19);
} catch {
  // Not allowed here (some containers): it still hashes, at normal priority.
}

process.on('message', async (request: HashRequest) => {
  let answer: HashAnswer;
  try {
    answer = { id: request.id, result: request.op === 'hash' ? await hash(request.password) : await verify(request.hash, request.password).catch(() => false) };
  } catch (error) {
    answer = { id: request.id, error: String((error as Error)?.message ?? error) };
  }
  process.send?.(answer);
});
process.on('disconnect', () => process.exit(0));
