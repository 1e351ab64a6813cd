import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { hash, verify } from '@node-rs/argon2';

// argon2 (19 MiB, ~20 ms of a core per hash) runs in a child process at the lowest CPU priority (nice 19):
// when the licensing API needs the cores, the kernel gives them to it and sign-ins wait, so a sign-in flood
// cannot starve validate. Falls back to this process when the child cannot be started.

type Work = { op: 'hash'; password: string } | { op: 'verify'; hash: string; password: string };

const argon2Path = createRequire(import.meta.url).resolve('@node-rs/argon2');
const CHILD = `
const { hash, verify } = require(${JSON.stringify(argon2Path)});
try { require('node:os').setPriority(19); } catch {}
process.on('message', async (m) => {
  try {
    const result = m.op === 'hash' ? await hash(m.password) : await verify(m.hash, m.password).catch(() => false);
    process.send({ id: m.id, result });
  } catch (error) {
    process.send({ id: m.id, error: String(error && error.message || error) });
  }
});
process.on('disconnect', () => process.exit(0));
`;

let child: ChildProcess | null = null;
let broken = false;
let nextId = 1;
const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

function worker(): ChildProcess | null {
  if (child || broken) return child;
  try {
    const started = spawn(process.execPath, ['-e', CHILD], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { PATH: process.env.PATH, UV_THREADPOOL_SIZE: '4' } });
    started.on('message', (message: { id: number; result?: unknown; error?: string }) => {
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.result);
      if (pending.size === 0) started.unref(); // an idle hasher never keeps the process alive
    });
    started.on('exit', () => {
      if (child === started) child = null;
      for (const [id, waiter] of pending) {
        pending.delete(id);
        waiter.reject(new Error('password hasher exited'));
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

function call(request: Work): Promise<unknown> {
  const target = worker();
  if (!target?.connected) return request.op === 'hash' ? hash(request.password) : verify(request.hash, request.password).catch(() => false);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    target.ref();
    target.send({ ...request, id }, (error) => {
      if (!error) return;
      pending.delete(id);
      reject(error);
    });
  });
}

export const argon2Hash = (password: string) => call({ op: 'hash', password }) as Promise<string>;
export const argon2Verify = (passwordHash: string, password: string) => call({ op: 'verify', hash: passwordHash, password }) as Promise<boolean>;
