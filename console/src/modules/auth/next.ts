/** Where to go after signing in: only same-app paths are followed (no open redirect). */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') && !next.startsWith('/setup') ? next : '/';
}
