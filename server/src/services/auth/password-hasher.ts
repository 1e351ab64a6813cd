import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hash, verify } from '@node-rs/argon2';
import type { HashAnswer, HashRequest } from './password-hasher-child.js';

// argon2 (19 MiB, ~20 ms of a core per hash) runs in a child process at the lowest CPU priority (nice 19:
// password-hasher-child.ts): when the licensing API needs the cores, the kernel gives them to it and sign-ins wait,
// so a sign-in flood cannot starve validate. Falls back to this process when the child cannot be started.

type Work = { op: 'hash'; password: string } | { op: 'verify'; hash: string; password: string };

const inProcess = (work: Work): Promise<string | boolean> => (work.op === 'hash' ? hash(work.password) : verify(work.hash, work.password).catch(() => false));

/**
 * The child module beside this one: `.js` in the built server (server/dist), `.ts` from the sources (tests,
 * `pnpm worker`, `pnpm dev`), which node runs through tsx's loader.
 */
function childCommand(): string[] {
  const self = fileURLToPath(import.meta.url);
  const fromSources = self.endsWith('.ts');
  const child = self.replace(/password-hasher\.([cm]?[jt]s)$/, 'password-hasher-child.$1');
  return fromSources ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href, child] : [child];
}

let child: ChildProcess | null = null;
let broken = false;
let nextId = 1;
const pending = new Map<number, { work: Work; resolve: (value: string | boolean) => void; reject: (error: Error) => void }>();

function worker(): ChildProcess | null {
  if (child || broken) return child;
  try {
    const started = spawn(process.execPath, childCommand(), { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { PATH: process.env.PATH, UV_THREADPOOL_SIZE: '4' } });
    let answered = false;
    started.on('message', (answer: HashAnswer) => {
      answered = true;
      const waiter = pending.get(answer.id);
      pending.delete(answer.id);
      if ('error' in answer) waiter?.reject(new Error(answer.error));
      else waiter?.resolve(answer.result);
      if (pending.size === 0) started.unref(); // an idle hasher never keeps the process alive
    });
    started.on('exit', () => {
      if (child === started) child = null;
      // A child that never answered cannot start here: hash in this process from now on.
      if (!answered) broken = true;
      // Whatever it held is hashed here instead: a sign-in does not fail because the hasher went away.
      for (const [id, waiter] of pending) {
        pending.delete(id);
        inProcess(waiter.work).then(waiter.resolve, waiter.reject);
      }
    });
    started.on('error', () => {
      broken = true;
    });
    started.unref();
    (started.channel as unknown as { unref(): void } | undefined)?.unref();
    child = started;
  } catch {
    broken = true;
  }
  return child;
}

function call(work: Work): Promise<string | boolean> {
  const target = worker();
  if (!target?.connected) return inProcess(work);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { work, resolve, reject });
    target.ref();
    target.send({ ...work, id } satisfies HashRequest, (error) => {
      if (!error || !pending.delete(id)) return;
      inProcess(work).then(resolve, reject);
    });
  });
}

export const argon2Hash = (password: string) => call({ op: 'hash', password }) as Promise<string>;
export const argon2Verify = (passwordHash: string, password: string) => call({ op: 'verify', hash: passwordHash, password }) as Promise<boolean>;

/** The hasher's child process id, or null while none runs (tests check it runs at nice 19). */
export const hasherPid = () => child?.pid ?? null;
